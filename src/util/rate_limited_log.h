#pragma once
// RateLimitedLog: writes at most `per_second` lines a second to stderr and reports how many were
// suppressed, so a flood of bad input cannot turn into a flood of log I/O. Thread-safe.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string_view>

namespace arenarpc::util {

class RateLimitedLog {
 public:
  explicit RateLimitedLog(int per_second = 5) : per_second_(per_second) {}
  void Log(std::string_view line);
  uint64_t suppressed_total() const;

 private:
  const int per_second_;
  mutable std::mutex mutex_;
  std::chrono::steady_clock::time_point window_start_{};
  int in_window_ = 0;
  uint64_t suppressed_in_window_ = 0;
  uint64_t suppressed_total_ = 0;
};

}  // namespace arenarpc::util
