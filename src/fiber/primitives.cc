// The public fiber primitives (include/arenarpc/fiber.h) over Fiber, Scheduler and Waiter.
#include <thread>
#include <vector>

#include "arenarpc/fiber.h"
#include "fiber/fiber.h"
#include "fiber/scheduler.h"
#include "fiber/waiter.h"

namespace arenarpc::fiber {

bool InFiber() noexcept { return CurrentFiber() != nullptr; }

void SleepUntil(Clock::time_point deadline) {
  if (!InFiber()) {
    std::this_thread::sleep_until(deadline);
    return;
  }
  std::make_shared<Waiter>()->Wait(deadline);  // nobody else notifies it: the timer does
}

void SleepFor(Clock::duration duration) { SleepUntil(Clock::now() + duration); }

void Yield() {
  Fiber* fiber = CurrentFiber();
  if (fiber == nullptr) {
    std::this_thread::yield();
    return;
  }
  fiber->Suspend(
      [](void* self) {
        auto* suspended = static_cast<Fiber*>(self);
        suspended->scheduler()->Schedule(suspended);
      },
      fiber);
}

bool Start(std::function<void()> body) {
  Fiber* fiber = CurrentFiber();
  return fiber != nullptr && fiber->scheduler()->Spawn(std::move(body));
}

// --- Mutex

bool Mutex::try_lock() noexcept {
  int expected = 0;
  return state_.compare_exchange_strong(expected, 1, std::memory_order_acquire);
}

void Mutex::lock() {
  if (try_lock()) return;
  std::shared_ptr<Waiter> waiter;
  {
    std::lock_guard guard(guard_);
    if (state_.exchange(2, std::memory_order_acquire) == 0) return;  // freed meanwhile: ours
    waiter = std::make_shared<Waiter>();
    waiters_.push_back(waiter);
  }
  waiter->Wait();  // unlock() hands the mutex over before waking us
}

void Mutex::unlock() {
  int expected = 1;
  if (state_.compare_exchange_strong(expected, 0, std::memory_order_release)) return;
  std::shared_ptr<Waiter> next;
  {
    std::lock_guard guard(guard_);
    if (waiters_.empty()) {
      state_.store(0, std::memory_order_release);
      return;
    }
    next = std::move(waiters_.front());
    waiters_.pop_front();
    state_.store(waiters_.empty() ? 1 : 2, std::memory_order_release);
  }
  next->Notify();
}

// --- ConditionVariable

std::shared_ptr<Waiter> ConditionVariable::Enqueue() {
  auto waiter = std::make_shared<Waiter>();
  std::lock_guard guard(guard_);
  waiters_.push_back(waiter);
  return waiter;
}

bool ConditionVariable::Park(const std::shared_ptr<Waiter>& waiter, Clock::time_point deadline) {
  if (waiter->Wait(deadline) == Waiter::kNotified) return true;
  std::lock_guard guard(guard_);
  for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
    if (*it == waiter) {
      waiters_.erase(it);
      break;
    }
  }
  return false;
}

void ConditionVariable::notify_one() {
  std::lock_guard guard(guard_);
  while (!waiters_.empty()) {
    std::shared_ptr<Waiter> waiter = std::move(waiters_.front());
    waiters_.pop_front();
    if (waiter->Notify()) return;  // else it timed out already: wake the next one
  }
}

void ConditionVariable::notify_all() {
  std::deque<std::shared_ptr<Waiter>> waiters;
  {
    std::lock_guard guard(guard_);
    waiters.swap(waiters_);
  }
  for (const auto& waiter : waiters) waiter->Notify();
}

// --- Event

void Event::Set() {
  std::lock_guard lock(mutex_);
  set_ = true;
  cv_.notify_all();
}

void Event::Reset() {
  std::lock_guard lock(mutex_);
  set_ = false;
}

bool Event::IsSet() const {
  std::lock_guard lock(mutex_);
  return set_;
}

void Event::Wait() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [this] { return set_; });
}

bool Event::WaitUntil(Clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  return cv_.wait_until(lock, deadline, [this] { return set_; });
}

// --- FiberLocal

namespace detail {
namespace {

// Outside fibers, FiberLocal values live per thread, destroyed when the thread exits.
struct ThreadLocals {
  std::vector<Fiber::Local> locals;
  ~ThreadLocals() {
    while (!locals.empty()) {
      std::vector<Fiber::Local> taken;
      taken.swap(locals);
      for (const Fiber::Local& local : taken) local.destroy(local.value);
    }
  }
};
thread_local ThreadLocals thread_locals;

std::vector<Fiber::Local>& Locals() {
  Fiber* fiber = CurrentFiber();
  return fiber != nullptr ? fiber->locals() : thread_locals.locals;
}

}  // namespace

void* GetLocal(const void* key) noexcept {
  for (const Fiber::Local& local : Locals()) {
    if (local.key == key) return local.value;
  }
  return nullptr;
}

void SetLocal(const void* key, void* value, void (*destroy)(void*)) {
  Locals().push_back(Fiber::Local{key, value, destroy});
}

}  // namespace detail
}  // namespace arenarpc::fiber
