#pragma once
// EventLoopGroup: N I/O threads, each running its own asio::io_context (one loop per thread, no
// locking inside a loop). Connections are spread over the loops round-robin and stay on theirs.

#include <asio/io_context.hpp>

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace arenarpc::net {

class EventLoopGroup {
 public:
  // num_threads >= 1. Threads start at once and run until Stop().
  EventLoopGroup(int num_threads, std::string name);
  ~EventLoopGroup();  // Stop() + join
  EventLoopGroup(const EventLoopGroup&) = delete;
  EventLoopGroup& operator=(const EventLoopGroup&) = delete;

  size_t size() const noexcept { return loops_.size(); }
  asio::io_context& loop(size_t i) { return *loops_[i]->context; }
  // The next loop in round-robin order (thread-safe).
  asio::io_context& Next();

  // Lets every loop finish its queued handlers, then joins the threads. Idempotent; not from a
  // loop thread. Sockets must have been closed before (their handlers then complete with errors).
  void Stop();
  // True if the calling thread is one of this group's loop threads.
  bool InLoopThread() const noexcept;

 private:
  struct Loop {
    std::unique_ptr<asio::io_context> context;
    std::unique_ptr<asio::executor_work_guard<asio::io_context::executor_type>> work;
    std::thread thread;
  };
  std::vector<std::unique_ptr<Loop>> loops_;
  std::atomic<size_t> next_{0};
  std::atomic<bool> stopped_{false};
};

}  // namespace arenarpc::net
