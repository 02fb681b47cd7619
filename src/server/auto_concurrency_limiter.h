#pragma once
// AutoConcurrencyLimiter: the limit behind max_concurrency = "auto". It admits as many calls as the
// server actually runs at once, so that admitted calls barely wait and the excess is rejected at
// once with ELIMIT.
//
// Every window (>= 100 ms and >= 20 completed calls, or 1 s) it measures the rate of successful
// calls and their mean service time (a thread taking the call to its reply: queueing excluded).
// By Little's law their product is how many calls were running on average (`running`).
//  - When that fills the limit (running >= 90 % of it), the limit binds and the server may have
//    room for more: it probes upward to max(limit + 1, ceil(running * 1.3)).
//  - Otherwise admitted calls waited for a thread: the limit drops to what runs, ceil(running),
//    never below min_limit. If this follows a probe that raised nothing (running grew < 10 %),
//    the server is saturated and probing pauses for probe_backoff_windows windows.
// A CPU-bound server so settles at its thread count; one whose handlers wait on backends grows
// until running stops rising. Thread-safe.

#include <atomic>
#include <cstdint>
#include <mutex>

namespace arenarpc::server {

class AutoConcurrencyLimiter {
 public:
  struct Options {
    int min_limit = 1;          // the handler threads: fewer would leave a thread idle
    int max_limit = 1 << 20;
    int initial_limit = 16;
    double margin = 0.3;        // growth factor of a probe
    int64_t window_min_us = 100'000;
    int64_t window_max_us = 1'000'000;
    int window_min_samples = 20;
    int probe_backoff_windows = 200;
  };
  explicit AutoConcurrencyLimiter(const Options& options);

  int limit() const noexcept { return limit_.load(std::memory_order_relaxed); }
  // A call admitted under this limiter finished: `service_us` from its handler's start to its
  // reply. Failed calls count for nothing.
  void OnCallEnd(int64_t now_us, int64_t service_us, bool ok);
  // Starts learning again from initial_limit (max_concurrency switched back to "auto" at run
  // time: what it learned before no longer describes the server).
  void Reset();

 private:
  void CloseWindow(int64_t now_us);  // mutex_ held

  const Options options_;
  std::atomic<int> limit_;
  std::mutex mutex_;
  int64_t window_start_us_ = 0;
  int64_t window_calls_ = 0;
  int64_t window_service_us_ = 0;
  bool probing_ = false;          // the last window raised the limit to look for room
  double running_before_probe_ = 0;
  int probe_pause_ = 0;           // windows left without probing
};

}  // namespace arenarpc::server
