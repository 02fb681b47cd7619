#include "fiber/scheduler.h"

#include <asio/post.hpp>

#include <utility>

#include "util/thread_slice.h"

namespace arenarpc::fiber {

Scheduler::Scheduler(asio::any_io_executor executor, Options options)
    : executor_(std::move(executor)), options_(options) {}

Scheduler::~Scheduler() { delete hot_.exchange(nullptr); }

bool Scheduler::TryReserve() noexcept {
  if (live_.fetch_add(1, std::memory_order_relaxed) >= options_.max_fibers) {
    Unreserve();
    return false;
  }
  return true;
}

void Scheduler::Unreserve() noexcept {
  // Sequentially consistent with WaitIdle()'s store and load: either this sees waiting_idle_ or
  // WaitIdle() sees live_ at 0.
  if (live_.fetch_sub(1) == 1 && waiting_idle_.load()) {
    std::lock_guard lock(mutex_);
    idle_.notify_all();
  }
}

std::unique_ptr<Fiber> Scheduler::Acquire() {
  if (Fiber* hot = hot_.exchange(nullptr, std::memory_order_acquire)) {
    return std::unique_ptr<Fiber>(hot);
  }
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
  Fiber* empty = nullptr;
  if (options_.cached_stacks > 0 &&
      hot_.compare_exchange_strong(empty, fiber.get(), std::memory_order_release,
                                   std::memory_order_relaxed)) {
    fiber.release();  // owned by hot_
    Unreserve();
    return;
  }
  {
    std::lock_guard lock(mutex_);
    if (free_.size() + 1 < static_cast<size_t>(options_.cached_stacks)) {
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
  waiting_idle_.store(true);
  idle_.wait(lock, [this] { return live_.load() == 0; });
  waiting_idle_.store(false);
}

}  // namespace arenarpc::fiber
