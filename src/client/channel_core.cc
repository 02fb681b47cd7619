#include "client/channel_core.h"

#include <asio/post.hpp>

#include <cstdlib>

#include "arenarpc/logging.h"
#include "client/connection_manager.h"
#include "net/endpoint.h"

namespace arenarpc::client {

ChannelStats ChannelCounters::Snapshot() const noexcept {
  ChannelStats s;
  s.calls = calls.load(std::memory_order_relaxed);
  s.failed_calls = failed_calls.load(std::memory_order_relaxed);
  s.timeouts = timeouts.load(std::memory_order_relaxed);
  s.retries = retries.load(std::memory_order_relaxed);
  s.dropped_responses = dropped_responses.load(std::memory_order_relaxed);
  s.connections_opened = connections_opened.load(std::memory_order_relaxed);
  s.connections_failed = connections_failed.load(std::memory_order_relaxed);
  return s;
}

ChannelCore::ChannelCore(const asio::ip::tcp::endpoint& endpoint, const ChannelOptions& options)
    : options_(options),
      endpoint_(endpoint),
      remote_side_(net::EndpointToString(endpoint)),
      callbacks_(options.callback_threads > 0
                     ? std::make_unique<net::EventLoopGroup>(options.callback_threads, "arpc-done")
                     : nullptr),
      loops_(std::make_unique<net::EventLoopGroup>(options.io_threads, "arpc-client")),
      connections_(ConnectionManager::Create(options.connection_type, this)) {}

ChannelCore::~ChannelCore() { Shutdown(); }

void ChannelCore::Shutdown() {
  if (InRuntimeThread()) {
    // Joining the runtime threads from one of them cannot work; this is a caller bug.
    Log(LogLevel::kError, "a Channel was destroyed from its own done callback");
    std::abort();
  }
  if (shutting_down_.exchange(true, std::memory_order_acq_rel)) return;
  // Closing fails every pending call (their retries find the manager closed); the loops then
  // drain the queued handlers and their threads end.
  connections_->CloseAll();
  loops_->Stop();
  // After the I/O threads: the dones they queued (the failed pending calls') still run.
  if (callbacks_) callbacks_->Stop();
}

bool ChannelCore::PostCallback(std::function<void()> callback) {
  if (!callbacks_) return false;
  asio::post(callbacks_->Next(), std::move(callback));
  return true;
}

bool ChannelCore::InRuntimeThread() const noexcept {
  return loops_->InLoopThread() || (callbacks_ && callbacks_->InLoopThread());
}

uint32_t ChannelCore::NextCallSlot() noexcept {
  uint32_t slot = next_slot_.fetch_add(1, std::memory_order_relaxed);
  if (slot == 0) slot = next_slot_.fetch_add(1, std::memory_order_relaxed);  // wrapped
  return slot;
}

}  // namespace arenarpc::client
