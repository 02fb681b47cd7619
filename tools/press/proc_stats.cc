#include "press/proc_stats.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

namespace arenarpc::press {
namespace {

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool ParseU64(std::string_view text, uint64_t* out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::optional<CpuTicks> ParseProcStat(std::string_view stat) {
  const size_t paren = stat.rfind(')');
  if (paren == std::string_view::npos) return std::nullopt;
  std::string_view rest = stat.substr(paren + 1);
  // Fields after ')': state(3) ppid(4) pgrp(5) session(6) tty_nr(7) tpgid(8) flags(9) minflt(10)
  // cminflt(11) majflt(12) cmajflt(13) utime(14) stime(15) ...
  constexpr int kUtime = 11, kStime = 12;
  CpuTicks ticks;
  int index = 0;
  bool have_user = false, have_system = false;
  while (!rest.empty() && index <= kStime) {
    const size_t begin = rest.find_first_not_of(" \n");
    if (begin == std::string_view::npos) break;
    rest.remove_prefix(begin);
    const size_t end = std::min(rest.find_first_of(" \n"), rest.size());
    const std::string_view field = rest.substr(0, end);
    if (index == kUtime) have_user = ParseU64(field, &ticks.user);
    if (index == kStime) have_system = ParseU64(field, &ticks.system);
    rest.remove_prefix(end);
    ++index;
  }
  if (!have_user || !have_system) return std::nullopt;
  return ticks;
}

std::optional<uint64_t> ParseVmRssBytes(std::string_view status) {
  constexpr std::string_view kKey = "\nVmRSS:";
  size_t at = status.starts_with(kKey.substr(1)) ? 0 : status.find(kKey);
  if (at == std::string_view::npos) return std::nullopt;
  at = status.find(':', at) + 1;
  std::string_view line = status.substr(at, status.find('\n', at) - at);
  const size_t begin = line.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return std::nullopt;
  line.remove_prefix(begin);
  const size_t space = line.find(' ');
  if (space == std::string_view::npos || line.substr(space + 1) != "kB") return std::nullopt;
  uint64_t kb = 0;
  if (!ParseU64(line.substr(0, space), &kb)) return std::nullopt;
  return kb * 1024;
}

std::optional<CpuTicks> ReadCpuTicks(int pid) {
  const auto text = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  return text ? ParseProcStat(*text) : std::nullopt;
}

std::optional<uint64_t> ReadVmRssBytes(int pid) {
  const auto text = ReadFile("/proc/" + std::to_string(pid) + "/status");
  return text ? ParseVmRssBytes(*text) : std::nullopt;
}

long TicksPerSecond() {
  static const long ticks = sysconf(_SC_CLK_TCK);
  return ticks;
}

ProcessSampler::ProcessSampler(int pid, std::chrono::milliseconds interval)
    : pid_(pid), interval_(interval) {}

ProcessSampler::~ProcessSampler() { Stop(); }

void ProcessSampler::SampleRss() {
  const auto rss = ReadVmRssBytes(pid_);
  std::lock_guard lock(mu_);
  if (!rss) {
    vanished_ = true;
    return;
  }
  usage_.rss_peak = std::max(usage_.rss_peak, *rss);
  usage_.rss_end = *rss;
  ++usage_.rss_samples;
}

bool ProcessSampler::Start() {
  const auto ticks = ReadCpuTicks(pid_);
  const auto rss = ReadVmRssBytes(pid_);
  if (!ticks || !rss) return false;
  start_ticks_ = *ticks;
  start_time_ = std::chrono::steady_clock::now();
  usage_.rss_start = usage_.rss_peak = usage_.rss_end = *rss;
  usage_.rss_samples = 1;
  started_ = true;
  thread_ = std::thread([this] { Loop(); });
  return true;
}

void ProcessSampler::Loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (cv_.wait_for(lock, interval_, [this] { return stopping_; })) break;
    lock.unlock();
    SampleRss();
    lock.lock();
  }
}

ProcessUsage ProcessSampler::Stop() {
  if (!started_) return usage_;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return usage_;
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  const auto end_ticks = ReadCpuTicks(pid_);
  const auto end_time = std::chrono::steady_clock::now();
  SampleRss();
  std::lock_guard lock(mu_);
  usage_.wall_seconds = std::chrono::duration<double>(end_time - start_time_).count();
  usage_.valid = end_ticks.has_value() && !vanished_;
  if (end_ticks) {
    usage_.cpu_seconds =
        static_cast<double>(end_ticks->total() - start_ticks_.total()) / TicksPerSecond();
    usage_.cores = usage_.wall_seconds > 0 ? usage_.cpu_seconds / usage_.wall_seconds : 0;
  }
  return usage_;
}

}  // namespace arenarpc::press
