#pragma once
// Scheduler: runs fibers on the threads of an Asio executor (the server's shared io_context, or
// its worker pool). A runnable fiber is a handler posted to that executor, so whichever thread is
// free resumes it next — every thread serves one shared run queue, which is what work stealing
// achieves with per-thread queues: a busy thread never strands runnable fibers.
//
// Bounds: at most max_fibers live at once (TryReserve() says no past it) and each has a
// stack_size stack; up to cached_stacks finished fibers keep their stack for the next one (one of
// them in a lock-free slot: a thread that runs calls one after the other takes no lock).

#include <asio/any_io_executor.hpp>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "fiber/fiber.h"

namespace arenarpc::fiber {

class Scheduler {
 public:
  struct Options {
    size_t stack_size = 256 << 10;
    int max_fibers = 4096;     // > 0
    int cached_stacks = 512;   // finished fibers kept for reuse
  };

  Scheduler(asio::any_io_executor executor, Options options);
  ~Scheduler();  // no fiber may be live (WaitIdle() first)
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Reserves one live fiber; false at max_fibers. Every true is followed by one Run*Reserved().
  bool TryReserve() noexcept;
  // Starts entry(arg) on a new fiber on this thread now; returns when it finishes or first
  // waits (it then continues on whichever thread resumes it). Throws std::bad_alloc (reservation
  // released) if no stack can be mapped.
  void RunReserved(Fiber::Entry entry, void* arg);
  // As RunReserved, but the fiber's first run is queued on the executor.
  void PostReserved(Fiber::Entry entry, void* arg);
  // Reserves a fiber and queues `body` on it; false (body not run) at max_fibers.
  bool Spawn(std::function<void()> body);
  // Makes a suspended fiber runnable: queues its resumption on the executor.
  void Schedule(Fiber* fiber);

  int live() const noexcept { return live_.load(std::memory_order_relaxed); }
  const Options& options() const noexcept { return options_; }
  const asio::any_io_executor& executor() const noexcept { return executor_; }
  // Blocks (a plain thread) until no fiber is live.
  void WaitIdle();

 private:
  void RunSlice(Fiber* fiber);
  std::unique_ptr<Fiber> Acquire();
  void Release(std::unique_ptr<Fiber> fiber);
  void Unreserve() noexcept;

  const asio::any_io_executor executor_;
  const Options options_;
  std::atomic<int> live_{0};
  std::atomic<Fiber*> hot_{nullptr};  // the last finished fiber (owned), when cached_stacks > 0
  std::mutex mutex_;                  // guards free_ and the wait for idle
  std::vector<std::unique_ptr<Fiber>> free_;  // at most cached_stacks - 1 more
  std::atomic<bool> waiting_idle_{false};     // WaitIdle() runs: Unreserve() must notify
  std::condition_variable idle_;
};

}  // namespace arenarpc::fiber
