#include "net/event_loop_group.h"

#include <pthread.h>

#include <stdexcept>

namespace arenarpc::net {

EventLoopGroup::EventLoopGroup(int num_threads, std::string name, LoopSharing sharing) {
  if (num_threads < 1) throw std::invalid_argument("EventLoopGroup needs at least one thread");
  const bool shared = sharing == LoopSharing::kShared;
  const int contexts = shared ? 1 : num_threads;
  for (int i = 0; i < contexts; ++i) {
    // Concurrency hint 1 when exactly one thread runs a context: Asio can skip its locking.
    contexts_.push_back(std::make_unique<asio::io_context>(shared ? num_threads : 1));
    work_.push_back(std::make_unique<WorkGuard>(contexts_.back()->get_executor()));
  }
  threads_.reserve(static_cast<size_t>(num_threads));
  for (int i = 0; i < num_threads; ++i) {
    asio::io_context* context = contexts_[shared ? 0 : static_cast<size_t>(i)].get();
    threads_.emplace_back([context, thread_name = name.substr(0, 11) + ":" + std::to_string(i)] {
      pthread_setname_np(pthread_self(), thread_name.c_str());
      context->run();
    });
  }
}

EventLoopGroup::~EventLoopGroup() { Stop(); }

asio::io_context& EventLoopGroup::Next() {
  return *contexts_[next_.fetch_add(1, std::memory_order_relaxed) % contexts_.size()];
}

void EventLoopGroup::Stop() {
  if (stopped_.exchange(true)) return;
  // Dropping the work guards lets run() return once the queued handlers are done.
  for (auto& guard : work_) guard.reset();
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

bool EventLoopGroup::InLoopThread() const noexcept {
  for (const auto& context : contexts_) {
    if (context->get_executor().running_in_this_thread()) return true;
  }
  return false;
}

}  // namespace arenarpc::net
