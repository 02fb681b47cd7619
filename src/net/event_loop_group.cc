#include "net/event_loop_group.h"

#include <pthread.h>

#include <stdexcept>

namespace arenarpc::net {

EventLoopGroup::EventLoopGroup(int num_threads, std::string name) {
  if (num_threads < 1) throw std::invalid_argument("EventLoopGroup needs at least one thread");
  loops_.reserve(static_cast<size_t>(num_threads));
  for (int i = 0; i < num_threads; ++i) {
    auto loop = std::make_unique<Loop>();
    // Concurrency hint 1: exactly one thread runs this context, so Asio can skip its locking.
    loop->context = std::make_unique<asio::io_context>(1);
    loop->work = std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(
        loop->context->get_executor());
    loops_.push_back(std::move(loop));
  }
  for (size_t i = 0; i < loops_.size(); ++i) {
    Loop* loop = loops_[i].get();
    loop->thread = std::thread([loop, thread_name = name.substr(0, 11) + ":" + std::to_string(i)] {
      pthread_setname_np(pthread_self(), thread_name.c_str());
      loop->context->run();
    });
  }
}

EventLoopGroup::~EventLoopGroup() { Stop(); }

asio::io_context& EventLoopGroup::Next() {
  return *loops_[next_.fetch_add(1, std::memory_order_relaxed) % loops_.size()]->context;
}

void EventLoopGroup::Stop() {
  if (stopped_.exchange(true)) return;
  // Dropping the work guards lets run() return once the queued handlers are done.
  for (auto& loop : loops_) loop->work.reset();
  for (auto& loop : loops_) {
    if (loop->thread.joinable()) loop->thread.join();
  }
}

bool EventLoopGroup::InLoopThread() const noexcept {
  for (const auto& loop : loops_) {
    if (loop->context->get_executor().running_in_this_thread()) return true;
  }
  return false;
}

}  // namespace arenarpc::net
