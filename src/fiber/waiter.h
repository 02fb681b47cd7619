#pragma once
// Waiter: one wait of one fiber or plain thread, woken once. The waiting side calls Wait(); any
// thread calls Notify(). On a fiber Wait() suspends it (its thread goes on with other work) and
// the first Notify() — or the deadline's timer — queues it on its scheduler; on a plain thread it
// blocks the thread. Whoever notifies first decides the outcome; later calls return false.
//
// Parking without lost wake-ups: the fiber publishes "parked" only once it is off its stack (in
// the dispatcher, Fiber::Suspend's `after`); a Notify() that comes before that finds "waiting",
// marks it notified and leaves the resumption to the dispatcher. Exactly one side schedules.
//
// Held by shared_ptr: a timer or a notifier may still hold it after Wait() returned.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

namespace arenarpc::fiber {

class Fiber;

class Waiter : public std::enable_shared_from_this<Waiter> {
 public:
  using Clock = std::chrono::steady_clock;
  enum Outcome : int { kNotified = 2, kTimedOut = 3 };

  Waiter();  // binds to the calling fiber, or to the calling thread outside fibers
  // Waits until notified or, if given, the deadline. Once per Waiter, by its creator.
  Outcome Wait(Clock::time_point deadline = Clock::time_point::max());
  // True if this call woke the waiter (it was neither notified nor timed out before).
  bool Notify(Outcome outcome = kNotified);

 private:
  static constexpr int kWaiting = 0, kParked = 1;
  static void AfterSuspend(void* self);

  std::atomic<int> state_{kWaiting};
  Fiber* const fiber_;
  std::mutex mutex_;  // plain threads only
  std::condition_variable cv_;
};

}  // namespace arenarpc::fiber
