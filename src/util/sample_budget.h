#pragma once
// SampleBudget: at most N samples per second of the steady clock, any thread, lock-free. Once a
// second's budget is spent, Take() only reads two shared words (no write), so that the calls not
// sampled cost no cache-line traffic between the I/O threads. Used by capture and rpcz.

#include <atomic>
#include <chrono>
#include <cstdint>

namespace arenarpc::util {

class SampleBudget {
 public:
  constexpr explicit SampleBudget(int per_second) : per_second_(per_second) {}

  // true: this call is one of the second's samples.
  bool Take(std::chrono::steady_clock::time_point now) noexcept {
    const int limit = per_second_.load(std::memory_order_relaxed);
    if (limit <= 0) return false;
    const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch())
                           .count();
    int64_t end = window_end_ns_.load(std::memory_order_relaxed);
    if (ns < end) {
      if (taken_.load(std::memory_order_relaxed) >= limit) return false;
    } else {
      // The first call of a new second opens it (one division a second); a racing caller sees
      // it opened.
      constexpr int64_t kSecond = 1'000'000'000;
      const int64_t next_end = ns - ns % kSecond + kSecond;
      if (window_end_ns_.compare_exchange_strong(end, next_end, std::memory_order_relaxed)) {
        taken_.store(0, std::memory_order_relaxed);
      }
    }
    return taken_.fetch_add(1, std::memory_order_relaxed) < limit;
  }

  int per_second() const noexcept { return per_second_.load(std::memory_order_relaxed); }
  // Any thread; 0 samples nothing.
  void set_per_second(int per_second) noexcept {
    per_second_.store(per_second, std::memory_order_relaxed);
  }

 private:
  std::atomic<int> per_second_;
  std::atomic<int64_t> window_end_ns_{0};  // the current second's end on the steady clock
  std::atomic<int> taken_{0};
};

}  // namespace arenarpc::util
