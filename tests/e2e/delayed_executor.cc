#include "delayed_executor.h"

namespace arenarpc::e2e {

DelayedExecutor::DelayedExecutor() : thread_([this] { Loop(); }) {}

DelayedExecutor::~DelayedExecutor() {
  Drain();
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void DelayedExecutor::RunAfter(std::chrono::milliseconds delay, std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push(Task{std::chrono::steady_clock::now() + delay, next_sequence_++, std::move(task)});
  }
  changed_.notify_all();
}

void DelayedExecutor::Drain() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return tasks_.empty() && running_ == 0; });
}

size_t DelayedExecutor::unfinished() {
  std::lock_guard lock(mutex_);
  return tasks_.size() + static_cast<size_t>(running_);
}

void DelayedExecutor::Loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    if (tasks_.empty()) {
      if (stopping_) return;
      changed_.wait(lock);
      continue;
    }
    const auto when = tasks_.top().when;
    if (std::chrono::steady_clock::now() < when) {
      changed_.wait_until(lock, when);
      continue;
    }
    std::function<void()> run = std::move(const_cast<Task&>(tasks_.top()).run);
    tasks_.pop();
    ++running_;
    lock.unlock();
    run();
    lock.lock();
    --running_;
    changed_.notify_all();
  }
}

}  // namespace arenarpc::e2e
