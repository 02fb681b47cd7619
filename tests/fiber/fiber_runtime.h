#pragma once
// A fiber runtime without a server, for tests: an io_context run by a few threads and a Scheduler
// on it.

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>

#include <functional>
#include <thread>
#include <utility>
#include <vector>

#include "fiber/scheduler.h"

namespace arenarpc::fiber {

class Runtime {
 public:
  explicit Runtime(int threads, Scheduler::Options options = {})
      : work_(io_.get_executor()), scheduler_(io_.get_executor(), options) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { io_.run(); });
  }
  ~Runtime() {
    scheduler_.WaitIdle();
    work_.reset();
    for (auto& thread : threads_) thread.join();
  }
  bool Spawn(std::function<void()> body) { return scheduler_.Spawn(std::move(body)); }
  Scheduler& scheduler() { return scheduler_; }

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  Scheduler scheduler_;
  std::vector<std::thread> threads_;
};

}  // namespace arenarpc::fiber
