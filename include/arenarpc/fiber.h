#pragma once
// Fibers: every server handler runs on a fiber (a user-space thread with its own small stack,
// scheduled over the server's threads; see docs/server.md, "Execution"). What a fiber waits for
// through the primitives below — a synchronous Channel call, Join(call_id), SleepFor, Mutex,
// ConditionVariable, Event, Future — suspends the fiber and frees its thread for other calls, as a
// bthread does in brpc. Outside fibers (a plain thread of the application) the same primitives
// block the thread, so code using them runs in both places.
//
//   arenarpc::fiber::Mutex mutex;                  // instead of std::mutex around waits
//   arenarpc::fiber::SleepFor(std::chrono::milliseconds(5));
//   auto a = arenarpc::fiber::Async([&] { return CallBackendA(); });  // runs on another fiber
//   auto b = CallBackendB();
//   Merge(a.get(), b);
//
// Code that blocks a thread for real (::sleep, a blocking syscall, std::mutex) keeps working on a
// fiber: it holds its thread meanwhile, as in brpc. Do not hold a std::mutex (or anything
// thread-affine) across a fiber wait: the fiber may continue on another thread.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

namespace arenarpc::fiber {

class Waiter;  // src/fiber/waiter.h

using Clock = std::chrono::steady_clock;

// True when called on a fiber.
bool InFiber() noexcept;
// Suspends the calling fiber (a plain thread: sleeps) for at least `duration` / until `deadline`.
void SleepFor(Clock::duration duration);
void SleepUntil(Clock::time_point deadline);
// A fiber goes to the back of the run queue; a plain thread yields its time slice.
void Yield();
// Starts `body` on a new fiber of the calling fiber's scheduler (the server's threads). false —
// and `body` is not run — outside a fiber or when the server's max_fibers are live.
bool Start(std::function<void()> body);

// A mutex whose lock() suspends a fiber instead of blocking its thread. Hands ownership to the
// waiters in arrival order. Unlike std::mutex, may be unlocked on another thread than it was
// locked on (the fiber may have moved). BasicLockable/Lockable: works with std::unique_lock.
class Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;
  void lock();
  bool try_lock() noexcept;
  void unlock();

 private:
  std::atomic<int> state_{0};  // 0 free, 1 locked, 2 locked with waiters
  std::mutex guard_;
  std::deque<std::shared_ptr<Waiter>> waiters_;
};

// A condition variable for fibers and threads alike, with any BasicLockable lock
// (std::unique_lock<fiber::Mutex> or std::unique_lock<std::mutex>).
class ConditionVariable {
 public:
  ConditionVariable() = default;
  ConditionVariable(const ConditionVariable&) = delete;
  ConditionVariable& operator=(const ConditionVariable&) = delete;

  void notify_one();
  void notify_all();

  template <class Lock>
  void wait(Lock& lock) {
    wait_until(lock, Clock::time_point::max());
  }
  template <class Lock, class Predicate>
  void wait(Lock& lock, Predicate predicate) {
    while (!predicate()) wait(lock);
  }
  template <class Lock>
  std::cv_status wait_until(Lock& lock, Clock::time_point deadline) {
    std::shared_ptr<Waiter> waiter = Enqueue();
    lock.unlock();
    const bool notified = Park(waiter, deadline);
    lock.lock();
    return notified ? std::cv_status::no_timeout : std::cv_status::timeout;
  }
  template <class Lock, class Predicate>
  bool wait_until(Lock& lock, Clock::time_point deadline, Predicate predicate) {
    while (!predicate()) {
      if (wait_until(lock, deadline) == std::cv_status::timeout) return predicate();
    }
    return true;
  }
  template <class Lock>
  std::cv_status wait_for(Lock& lock, Clock::duration timeout) {
    return wait_until(lock, Clock::now() + timeout);
  }
  template <class Lock, class Predicate>
  bool wait_for(Lock& lock, Clock::duration timeout, Predicate predicate) {
    return wait_until(lock, Clock::now() + timeout, std::move(predicate));
  }

 private:
  std::shared_ptr<Waiter> Enqueue();
  // Waits on `waiter`; false on timeout (then it is out of the queue).
  bool Park(const std::shared_ptr<Waiter>& waiter, Clock::time_point deadline);
  std::mutex guard_;
  std::deque<std::shared_ptr<Waiter>> waiters_;
};

// A flag that fibers and threads wait for (manual reset).
class Event {
 public:
  void Set();
  void Reset();
  bool IsSet() const;
  void Wait();
  // false if the deadline passed first.
  bool WaitUntil(Clock::time_point deadline);
  bool WaitFor(Clock::duration timeout) { return WaitUntil(Clock::now() + timeout); }

 private:
  mutable std::mutex mutex_;
  ConditionVariable cv_;
  bool set_ = false;
};

template <class T>
class Future;

namespace detail {
template <class T>
struct SharedState {
  using Stored = std::conditional_t<std::is_void_v<T>, std::monostate, T>;
  std::mutex mutex;
  ConditionVariable cv;
  std::optional<Stored> value;
  std::exception_ptr error;
  bool ready = false;
  void Finish() {
    ready = true;
    cv.notify_all();
  }
};
}  // namespace detail

// A one-shot value a fiber (or thread) waits for: Promise<T> sets it, Future<T>::get() waits.
template <class T>
class Promise {
 public:
  Promise() : state_(std::make_shared<detail::SharedState<T>>()) {}
  Future<T> get_future() { return Future<T>(state_); }
  template <class... V>
  void set_value(V&&... value) {
    std::lock_guard lock(state_->mutex);
    state_->value.emplace(std::forward<V>(value)...);
    state_->Finish();
  }
  void set_exception(std::exception_ptr error) {
    std::lock_guard lock(state_->mutex);
    state_->error = std::move(error);
    state_->Finish();
  }

 private:
  std::shared_ptr<detail::SharedState<T>> state_;
};

template <class T>
class Future {
 public:
  Future() = default;
  bool valid() const noexcept { return state_ != nullptr; }
  void wait() const {
    std::unique_lock lock(state_->mutex);
    state_->cv.wait(lock, [this] { return state_->ready; });
  }
  // false if the deadline passed before the value was set.
  bool wait_for(Clock::duration timeout) const {
    std::unique_lock lock(state_->mutex);
    return state_->cv.wait_for(lock, timeout, [this] { return state_->ready; });
  }
  // Waits, then returns the value (moved out) or rethrows the exception. Once.
  T get() {
    wait();
    std::shared_ptr<detail::SharedState<T>> state = std::move(state_);
    if (state->error) std::rethrow_exception(state->error);
    if constexpr (!std::is_void_v<T>) return std::move(*state->value);
  }

 private:
  friend class Promise<T>;
  explicit Future(std::shared_ptr<detail::SharedState<T>> state) : state_(std::move(state)) {}
  std::shared_ptr<detail::SharedState<T>> state_;
};

// Runs `fn` on a new fiber (Start()) and returns its result as a Future; when no fiber can be
// started (outside fibers, or at max_fibers) runs it on the calling one before returning.
template <class Fn>
auto Async(Fn fn) -> Future<std::invoke_result_t<Fn&>> {
  using R = std::invoke_result_t<Fn&>;
  auto promise = std::make_shared<Promise<R>>();
  Future<R> future = promise->get_future();
  auto run = [promise, fn = std::move(fn)]() mutable {
    try {
      if constexpr (std::is_void_v<R>) {
        fn();
        promise->set_value();
      } else {
        promise->set_value(fn());
      }
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  };
  if (!Start(run)) run();
  return future;
}

namespace detail {
// The slot of `key` on the calling fiber (outside fibers: on the calling thread); nullptr if unset.
void* GetLocal(const void* key) noexcept;
void SetLocal(const void* key, void* value, void (*destroy)(void*));
}  // namespace detail

// A value per fiber (outside fibers: per thread), created on first access with T(), destroyed
// when its fiber ends. Use it where thread_local would break once a fiber moves between threads.
// A FiberLocal must outlive every fiber that used it (make it static).
template <class T>
class FiberLocal {
 public:
  T& get() {
    if (void* value = detail::GetLocal(this)) return *static_cast<T*>(value);
    auto owned = std::make_unique<T>();
    T& value = *owned;
    detail::SetLocal(this, owned.release(), [](void* p) { delete static_cast<T*>(p); });
    return value;
  }
  T& operator*() { return get(); }
  T* operator->() { return &get(); }
};

}  // namespace arenarpc::fiber
