#pragma once
// MemorySeries: one method's message memory and CPU per call over the last ten minutes, as points
// of ten seconds each, for the /memory charts. Fed with sampled calls: the bytes a call's messages
// held when it ended, and the thread CPU the call took (only calls timed whole: ThreadCpuTimer).
//
// Record*() is lock-free except for the first record of a point, which clears the slot it reuses
// under a mutex (once per ten seconds per method).
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>

namespace arenarpc::stats {

struct MemoryPoint {
  uint64_t held_samples = 0, held_bytes_sum = 0;
  uint64_t cpu_samples = 0, cpu_ns_sum = 0;
  double held_bytes_per_call() const noexcept {
    return held_samples == 0 ? 0 : static_cast<double>(held_bytes_sum) / held_samples;
  }
  double cpu_ns_per_call() const noexcept {
    return cpu_samples == 0 ? 0 : static_cast<double>(cpu_ns_sum) / cpu_samples;
  }
};

class MemorySeries {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kPoints = 60;
  static constexpr int kPointSeconds = 10;

  explicit MemorySeries(Clock::time_point created = Clock::now()) : created_(created) {}
  MemorySeries(const MemorySeries&) = delete;
  MemorySeries& operator=(const MemorySeries&) = delete;

  void RecordHeld(uint64_t bytes, Clock::time_point now) noexcept;
  void RecordCpu(uint64_t ns, Clock::time_point now) noexcept;
  // The last kPoints points, oldest first, the newest (still filling) last.
  std::array<MemoryPoint, kPoints> Points(Clock::time_point now) const;

 private:
  struct Slot {
    std::atomic<int64_t> period{-1};
    std::atomic<uint64_t> held_samples{0}, held_bytes_sum{0}, cpu_samples{0}, cpu_ns_sum{0};
  };
  int64_t PeriodOf(Clock::time_point now) const noexcept;
  Slot& SlotFor(int64_t period) noexcept;

  const Clock::time_point created_;
  std::array<Slot, kPoints + 1> slots_;  // one spare: the oldest shown point is never being reset
  std::mutex reset_mu_;
};

}  // namespace arenarpc::stats
