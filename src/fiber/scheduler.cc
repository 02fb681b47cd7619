#include "fiber/scheduler.h"

#include <asio/post.hpp>

#include <utility>

#include "util/thread_slice.h"

namespace arenarpc::fiber {

Scheduler::Scheduler(asio::any_io_executor executor, Options options)
    : executor_(std::move(executor)), options_(options) {}

Scheduler::~Scheduler() = default;

bool Scheduler::TryReserve() noexcept {
  if (live_.fetch_add(1, std::memory_order_relaxed) >= options_.max_fibers) {
    Unreserve();
    return false;
  }
  return true;
}

void Scheduler::Unreserve() noexcept {
  if (live_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    std::lock_guard lock(mutex_);
    if (waiting_idle_) idle_.notify_all();
  }
}

std::unique_ptr<Fiber> Scheduler::Acquire() {
  {
    std::lock_guard lock(mutex_);
    if (!free_.empty()) {
      std::unique_ptr<Fiber> fiber = std::move(free_.back());
      free_.pop_back();
      return fiber;
    }
  }
  try {
    return std::make_unique<Fiber>(options_.stack_size);
  } catch (...) {
    Unreserve();
    throw;
  }
}

void Scheduler::Release(std::unique_ptr<Fiber> fiber) {
  {
    std::lock_guard lock(mutex_);
    if (free_.size() < static_cast<size_t>(options_.cached_stacks)) {
      free_.push_back(std::move(fiber));
    }
  }
  fiber.reset();  // not cached: unmapped outside the lock
  Unreserve();
}

void Scheduler::RunReserved(Fiber::Entry entry, void* arg) {
  std::unique_ptr<Fiber> fiber = Acquire();
  fiber->Start(this, entry, arg);
  RunSlice(fiber.release());
}

void Scheduler::PostReserved(Fiber::Entry entry, void* arg) {
  std::unique_ptr<Fiber> fiber = Acquire();
  fiber->Start(this, entry, arg);
  Schedule(fiber.release());
}

bool Scheduler::Spawn(std::function<void()> body) {
  if (!TryReserve()) return false;
  auto owned = std::make_unique<std::function<void()>>(std::move(body));
  PostReserved(
      [](void* arg) {
        std::unique_ptr<std::function<void()>> run(static_cast<std::function<void()>*>(arg));
        (*run)();
      },
      owned.get());
  owned.release();  // the fiber owns it now
  return true;
}

void Scheduler::Schedule(Fiber* fiber) {
  asio::post(executor_, [this, fiber] { RunSlice(fiber); });
}

void Scheduler::RunSlice(Fiber* fiber) {
  fiber->Resume();
  util::EndThreadSlice();
  if (fiber->finished()) {
    Release(std::unique_ptr<Fiber>(fiber));
  } else {
    fiber->RunAfterSuspend();  // from here another thread may resume it: not touched again
  }
}

void Scheduler::WaitIdle() {
  std::unique_lock lock(mutex_);
  waiting_idle_ = true;
  idle_.wait(lock, [this] { return live_.load(std::memory_order_acquire) == 0; });
  waiting_idle_ = false;
}

}  // namespace arenarpc::fiber
