#pragma once
// Server-process measurements from /proc: CPU time (utime+stime of /proc/PID/stat) and resident
// memory (VmRSS of /proc/PID/status), and a sampler that covers exactly one measured window.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace arenarpc::press {

struct CpuTicks {
  uint64_t user = 0, system = 0;  // clock ticks (sysconf(_SC_CLK_TCK) per second)
  uint64_t total() const { return user + system; }
};

// Parsers of the files' text; nullopt when malformed. The comm field of stat may contain spaces
// and parentheses, so fields are counted from the last ')'.
std::optional<CpuTicks> ParseProcStat(std::string_view stat);
std::optional<uint64_t> ParseVmRssBytes(std::string_view status);

// Readers; nullopt when the process does not exist (or the file is unreadable).
std::optional<CpuTicks> ReadCpuTicks(int pid);
std::optional<uint64_t> ReadVmRssBytes(int pid);
long TicksPerSecond();

struct ProcessUsage {
  bool valid = false;         // false: the process vanished or was never readable
  double wall_seconds = 0;
  double cpu_seconds = 0;     // utime+stime consumed inside the window
  double cores = 0;           // cpu_seconds / wall_seconds
  uint64_t rss_start = 0, rss_peak = 0, rss_end = 0;  // bytes
  uint64_t rss_samples = 0;
};

// Samples one process between Start() and Stop(): CPU from the two end points, RSS peak from a
// background sample every `interval` (and at both ends).
class ProcessSampler {
 public:
  explicit ProcessSampler(int pid, std::chrono::milliseconds interval = std::chrono::milliseconds(50));
  ~ProcessSampler();
  ProcessSampler(const ProcessSampler&) = delete;
  ProcessSampler& operator=(const ProcessSampler&) = delete;

  bool Start();          // false if the process cannot be read
  ProcessUsage Stop();   // idempotent after the first call

 private:
  void SampleRss();
  void Loop();

  const int pid_;
  const std::chrono::milliseconds interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool started_ = false;
  bool vanished_ = false;
  std::thread thread_;
  std::chrono::steady_clock::time_point start_time_;
  CpuTicks start_ticks_;
  ProcessUsage usage_;
};

}  // namespace arenarpc::press
