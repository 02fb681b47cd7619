#pragma once
// StandingQueue: tells a standing backlog from a burst, by CoDel's test (Nichols and Jacobson's
// controlled delay, in the per-interval form RPC servers use): the backlog stands when, over a
// whole window, no call a thread took had waited less than the target. A burst drains below the
// target within a window and never counts. A standing backlog serves no more calls than a short
// one — the threads are busy either way — but every call in it waits longer, and the requests it
// holds cost memory: with 131 KB requests at 3x capacity, a backlog of ~500 ms made each served
// call cost ~30 % more CPU than one of at most 50 ms (docs/server.md "Overload").
//
// The target and window scale with the drain interval (the time between two calls leaving a busy
// backlog, QueueWaitEstimate): a few calls' worth of waiting, and never below CoDel's 5 ms and
// 100 ms, so that slow handlers are not held to a fast server's wait.
// Lock-free; racing dequeues may lose a sample, which only delays a verdict.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace arenarpc::server {

class StandingQueue {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::nanoseconds kMinTarget = std::chrono::milliseconds(5);
  static constexpr std::chrono::nanoseconds kMinWindow = std::chrono::milliseconds(100);
  static constexpr int kTargetCalls = 4;   // the target: at least this many drain intervals
  static constexpr int kWindowCalls = 20;  // a window: at least this many drain intervals

  static std::chrono::nanoseconds Target(std::chrono::nanoseconds drain_interval) {
    return std::max(kMinTarget, kTargetCalls * drain_interval);
  }
  static std::chrono::nanoseconds Window(std::chrono::nanoseconds drain_interval) {
    return std::max(kMinWindow, kWindowCalls * drain_interval);
  }
  // The longest predicted wait a call with a deadline is admitted to while the backlog stands:
  // twice the target, as CoDel-based servers drop past it.
  static std::chrono::nanoseconds Bound(std::chrono::nanoseconds drain_interval) {
    return 2 * Target(drain_interval);
  }

  // A thread took a call at `now` that had waited `waited` since its request was read.
  void OnDequeue(Clock::time_point now, std::chrono::nanoseconds waited,
                 std::chrono::nanoseconds drain_interval) {
    const int64_t now_ns = now.time_since_epoch().count();
    const int64_t wait_ns = waited.count();
    int64_t end = window_end_ns_.load(std::memory_order_relaxed);
    if (now_ns >= end) {  // the window closed (or none was open): one thread opens the next
      const int64_t window = Window(drain_interval).count();
      if (window_end_ns_.compare_exchange_strong(end, now_ns + window,
                                                 std::memory_order_relaxed)) {
        const int64_t min_wait = min_wait_ns_.exchange(wait_ns, std::memory_order_relaxed);
        // A window that closed long after its end saw too few dequeues to judge: no verdict.
        const bool judged = end != 0 && now_ns - end < window;
        // Once standing, the backlog is held between the target and the bound, so a call that
        // waited a little less than the target does not end the verdict (it would let the
        // backlog grow back to half a deadline at once): only half the target does.
        const int64_t target = Target(drain_interval).count();
        const bool was_standing = now_ns < verdict_until_ns_.load(std::memory_order_relaxed);
        const bool standing = judged && min_wait >= (was_standing ? target / 2 : target);
        verdict_until_ns_.store(standing ? now_ns + 2 * window : 0, std::memory_order_relaxed);
        return;
      }
    }
    int64_t min_wait = min_wait_ns_.load(std::memory_order_relaxed);
    while (wait_ns < min_wait &&
           !min_wait_ns_.compare_exchange_weak(min_wait, wait_ns, std::memory_order_relaxed)) {
    }
  }

  // The last full window found a standing backlog, and that verdict is fresh: the next window
  // closes before it lapses while threads keep taking calls; a server that went idle (or whose
  // threads stopped taking calls) is not judged on it.
  bool standing(Clock::time_point now) const {
    return now.time_since_epoch().count() < verdict_until_ns_.load(std::memory_order_relaxed);
  }

 private:
  std::atomic<int64_t> window_end_ns_{0};     // 0: no window open yet
  std::atomic<int64_t> min_wait_ns_{0};       // the shortest wait of the open window
  std::atomic<int64_t> verdict_until_ns_{0};  // standing until then (two windows; 0: not)
};

}  // namespace arenarpc::server
