#pragma once
// One thread that runs closures at given times: the "other thread" that async test handlers
// complete their calls on.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

namespace arenarpc::e2e {

class DelayedExecutor {
 public:
  DelayedExecutor();
  ~DelayedExecutor();  // runs what is due, drops nothing: waits for every queued task
  void RunAfter(std::chrono::milliseconds delay, std::function<void()> task);
  void Drain();        // blocks until every task queued so far has run
  size_t unfinished();  // tasks queued or running

 private:
  struct Task {
    std::chrono::steady_clock::time_point when;
    uint64_t sequence;
    std::function<void()> run;
    bool operator>(const Task& other) const {
      return when != other.when ? when > other.when : sequence > other.sequence;
    }
  };
  void Loop();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::priority_queue<Task, std::vector<Task>, std::greater<>> tasks_;
  uint64_t next_sequence_ = 0;
  int running_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace arenarpc::e2e
