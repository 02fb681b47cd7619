#pragma once
// PeriodicWorker: a background thread that runs a task every `interval` until destroyed or
// stopped; Stop() wakes it at once and joins it (the task is never run after Stop() returned).

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace arenarpc::cluster {

class PeriodicWorker {
 public:
  PeriodicWorker() = default;
  ~PeriodicWorker() { Stop(); }
  PeriodicWorker(const PeriodicWorker&) = delete;
  PeriodicWorker& operator=(const PeriodicWorker&) = delete;

  void Start(std::chrono::milliseconds interval, std::function<void()> task);
  void Stop();
  // From the task: sleeps up to `duration`, returns false if stopping meanwhile.
  bool SleepFor(std::chrono::milliseconds duration);

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace arenarpc::cluster
