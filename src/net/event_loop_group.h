#pragma once
// EventLoopGroup: N I/O threads running Asio io_contexts, in one of two shapes:
//   kPerThread: each thread runs its own io_context (no locking inside a loop); a socket stays on
//               the loop it was given. The client uses this.
//   kShared:    all threads run one io_context, so any idle thread picks up the next ready socket
//               or queued task. The server uses this: a handler that blocks one thread does not
//               stop the other threads from reading its connection (see docs/server.md).

#include <asio/io_context.hpp>

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace arenarpc::net {

enum class LoopSharing { kPerThread, kShared };

class EventLoopGroup {
 public:
  // num_threads >= 1. Threads start at once and run until Stop().
  EventLoopGroup(int num_threads, std::string name, LoopSharing sharing = LoopSharing::kPerThread);
  ~EventLoopGroup();  // Stop() + join
  EventLoopGroup(const EventLoopGroup&) = delete;
  EventLoopGroup& operator=(const EventLoopGroup&) = delete;

  size_t threads() const noexcept { return threads_.size(); }
  size_t loop_count() const noexcept { return contexts_.size(); }
  asio::io_context& loop(size_t i) { return *contexts_[i]; }
  // The next loop in round-robin order (thread-safe); always the same one when shared.
  asio::io_context& Next();

  // Lets every loop finish its queued handlers, then joins the threads. Idempotent; not from a
  // loop thread. Sockets must have been closed before (their handlers then complete with errors).
  void Stop();
  // True if the calling thread is one of this group's loop threads.
  bool InLoopThread() const noexcept;

 private:
  using WorkGuard = asio::executor_work_guard<asio::io_context::executor_type>;
  std::vector<std::unique_ptr<asio::io_context>> contexts_;
  std::vector<std::unique_ptr<WorkGuard>> work_;
  std::vector<std::thread> threads_;
  std::atomic<size_t> next_{0};
  std::atomic<bool> stopped_{false};
};

}  // namespace arenarpc::net
