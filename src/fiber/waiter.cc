#include "fiber/waiter.h"

#include <asio/steady_timer.hpp>

#include "fiber/fiber.h"
#include "fiber/scheduler.h"

namespace arenarpc::fiber {

Waiter::Waiter() : fiber_(CurrentFiber()) {}

Waiter::Outcome Waiter::Wait(Clock::time_point deadline) {
  if (fiber_ == nullptr) {
    std::unique_lock lock(mutex_);
    const auto done = [this] { return state_.load(std::memory_order_acquire) >= kNotified; };
    if (deadline == Clock::time_point::max()) {
      cv_.wait(lock, done);
    } else if (!cv_.wait_until(lock, deadline, done)) {
      state_.store(kTimedOut, std::memory_order_release);  // Notify() needs mutex_: none raced
    }
    return static_cast<Outcome>(state_.load(std::memory_order_acquire));
  }
  std::unique_ptr<asio::steady_timer> timer;
  if (deadline != Clock::time_point::max()) {
    timer = std::make_unique<asio::steady_timer>(fiber_->scheduler()->executor(), deadline);
    timer->async_wait([self = shared_from_this()](const asio::error_code& error) {
      if (!error) self->Notify(kTimedOut);
    });
  }
  if (state_.load(std::memory_order_acquire) == kWaiting) fiber_->Suspend(&AfterSuspend, this);
  if (timer) timer->cancel();  // its handler keeps this Waiter alive until it ran
  return static_cast<Outcome>(state_.load(std::memory_order_acquire));
}

void Waiter::AfterSuspend(void* self) {
  auto* waiter = static_cast<Waiter*>(self);
  Fiber* const fiber = waiter->fiber_;
  int expected = kWaiting;
  if (!waiter->state_.compare_exchange_strong(expected, kParked, std::memory_order_acq_rel)) {
    fiber->scheduler()->Schedule(fiber);  // notified while it was switching out
  }
}

bool Waiter::Notify(Outcome outcome) {
  if (fiber_ == nullptr) {
    std::lock_guard lock(mutex_);
    int expected = kWaiting;
    if (!state_.compare_exchange_strong(expected, outcome, std::memory_order_acq_rel)) return false;
    cv_.notify_one();
    return true;
  }
  Fiber* const fiber = fiber_;
  int state = state_.load(std::memory_order_acquire);
  while (state == kWaiting || state == kParked) {
    if (state_.compare_exchange_weak(state, outcome, std::memory_order_acq_rel)) {
      // Parked: the fiber is off its stack and only this call may resume it.
      if (state == kParked) fiber->scheduler()->Schedule(fiber);
      return true;
    }
  }
  return false;
}

}  // namespace arenarpc::fiber
