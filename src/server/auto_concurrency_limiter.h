#pragma once
// AutoConcurrencyLimiter: the limit behind max_concurrency = "auto". It keeps calls in flight near
// what the server completes per second times how long a call takes once it runs (Little's law),
// plus a margin, so that calls barely queue and the excess is rejected at once with ELIMIT.
//
// Every window (>= 100 ms and >= 20 completed calls, or 1 s) it measures the rate of successful
// calls and their mean service time (handler start to reply, queueing excluded), and sets
//   limit = max(min_limit, ceil(peak_rate * service_time * (1 + margin)))
// where peak_rate follows the highest recent rate (it rises at once and decays by 10 % a window) and
// service_time is smoothed. When the limit binds while threads are idle, completions rise with it,
// so the limit grows by the margin each window until the server saturates; once it saturates,
// the rate stops rising and the limit stays put. Queueing does not feed back into the limit because
// the service time excludes it. Thread-safe.

#include <atomic>
#include <cstdint>
#include <mutex>

namespace arenarpc::server {

class AutoConcurrencyLimiter {
 public:
  struct Options {
    int min_limit = 2;          // e.g. handler threads + 1: one call waits while each thread works
    int max_limit = 1 << 20;
    int initial_limit = 16;
    double margin = 0.3;
    int64_t window_min_us = 100'000;
    int64_t window_max_us = 1'000'000;
    int window_min_samples = 20;
  };
  explicit AutoConcurrencyLimiter(const Options& options);

  int limit() const noexcept { return limit_.load(std::memory_order_relaxed); }
  // A call admitted under this limiter finished: `service_us` from its handler's start to its
  // reply. Failed calls count for nothing.
  void OnCallEnd(int64_t now_us, int64_t service_us, bool ok);

 private:
  void CloseWindow(int64_t now_us);  // mutex_ held

  const Options options_;
  std::atomic<int> limit_;
  std::mutex mutex_;
  int64_t window_start_us_ = 0;
  int64_t window_calls_ = 0;
  int64_t window_service_us_ = 0;
  double peak_rate_ = 0;      // calls per second
  double service_us_ = 0;     // smoothed
};

}  // namespace arenarpc::server
