#pragma once
// QueueWaitEstimate: how long a call admitted now would wait in the backlog before a thread takes
// it — the calls queued ahead times the time between two calls leaving the backlog while it stays
// busy (Little's law on the observed drain rate). The drain rate includes whatever else the
// threads do (decoding, answering rejections, calls dropped at their start), so it needs no model
// of the handlers. Intervals are sampled only while the backlog is non-empty: at light load the
// time between dequeues measures the arrival rate, not what the threads can serve.
// Lock-free; samples that race may be lost, which only slows the average down.

#include <atomic>
#include <chrono>
#include <cstdint>

namespace arenarpc::server {

class QueueWaitEstimate {
 public:
  using Clock = std::chrono::steady_clock;

  // A call left the backlog at `now`; `queued_after`: calls still waiting behind it.
  void OnDequeue(Clock::time_point now, int64_t queued_after) {
    // The benign path: nothing waited before, nothing waits now — one relaxed load.
    if (queued_after <= 0 && !busy_.load(std::memory_order_relaxed)) return;
    const int64_t now_ns = now.time_since_epoch().count();
    const int64_t previous_ns = last_ns_.exchange(now_ns, std::memory_order_relaxed);
    const bool was_busy = busy_.exchange(queued_after > 0, std::memory_order_relaxed);
    if (!was_busy || previous_ns == 0 || now_ns <= previous_ns) return;
    // An exponential average over ~kWeight dequeues: a few milliseconds of a busy server.
    const int64_t sample = now_ns - previous_ns;
    const int64_t average = interval_ns_.load(std::memory_order_relaxed);
    interval_ns_.store(average == 0 ? sample : average + (sample - average) / kWeight,
                       std::memory_order_relaxed);
  }

  // The wait of a call with `queued` calls ahead of it; zero before any busy period was seen.
  std::chrono::nanoseconds Predict(int64_t queued) const {
    return std::chrono::nanoseconds(queued * interval_ns_.load(std::memory_order_relaxed));
  }
  // The time between dequeues of a busy backlog (0: not measured yet).
  std::chrono::nanoseconds interval() const {
    return std::chrono::nanoseconds(interval_ns_.load(std::memory_order_relaxed));
  }

 private:
  static constexpr int64_t kWeight = 16;
  std::atomic<bool> busy_{false};  // the last dequeue left calls waiting
  std::atomic<int64_t> last_ns_{0};
  std::atomic<int64_t> interval_ns_{0};
};

}  // namespace arenarpc::server
