#include "cluster/periodic_worker.h"

namespace arenarpc::cluster {

void PeriodicWorker::Start(std::chrono::milliseconds interval, std::function<void()> task) {
  thread_ = std::thread([this, interval, task = std::move(task)] {
    while (SleepFor(interval)) task();
  });
}

bool PeriodicWorker::SleepFor(std::chrono::milliseconds duration) {
  std::unique_lock lock(mutex_);
  return !wake_.wait_for(lock, duration, [this] { return stopping_; });
}

void PeriodicWorker::Stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace arenarpc::cluster
