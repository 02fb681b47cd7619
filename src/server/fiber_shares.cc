#include "server/fiber_shares.h"

#include <algorithm>
#include <utility>

#include "arenarpc/server.h"

namespace arenarpc::server {
namespace {

// Adds one to `count` unless it is at `limit`; true when added.
bool TryIncrement(std::atomic<int>& count, int limit) {
  if (count.fetch_add(1, std::memory_order_relaxed) < limit) return true;
  count.fetch_sub(1, std::memory_order_relaxed);
  return false;
}

}  // namespace

FiberShares::Limits FiberShares::LimitsFor(const ServerOptions& options) {
  Limits limits;
  limits.per_connection = options.max_fibers_per_connection;
  limits.streaming = options.max_streaming_fibers > 0 ? options.max_streaming_fibers
                                                      : std::max(1, options.max_fibers / 2);
  limits.streaming_per_connection = options.max_streaming_calls_per_connection;
  return limits;
}

FiberShares::Ticket FiberShares::TryTakeLimited(std::shared_ptr<Connection> connection,
                                                bool streaming, std::string* refusal) {
  if (limits_.per_connection > 0 && !TryIncrement(connection->fibers, limits_.per_connection)) {
    *refusal = "Reached server's max_fibers_per_connection=" +
               std::to_string(limits_.per_connection);
    return Ticket();
  }
  if (limits_.per_connection <= 0) connection->fibers.fetch_add(1, std::memory_order_relaxed);
  Ticket ticket(this, connection);
  if (!streaming) return ticket;
  if (!TryIncrement(connection->streaming, limits_.streaming_per_connection)) {
    *refusal = "Reached server's max_streaming_calls_per_connection=" +
               std::to_string(limits_.streaming_per_connection);
    ticket.Release();
    return ticket;
  }
  if (!TryIncrement(streaming_, limits_.streaming)) {
    connection->streaming.fetch_sub(1, std::memory_order_relaxed);
    *refusal = "Reached server's max_streaming_fibers=" + std::to_string(limits_.streaming);
    ticket.Release();
    return ticket;
  }
  ticket.streaming_ = true;
  return ticket;
}

void FiberShares::Ticket::ReleaseStreaming() noexcept {
  connection_->streaming.fetch_sub(1, std::memory_order_relaxed);
  shares_->streaming_.fetch_sub(1, std::memory_order_relaxed);
  streaming_ = false;
}

}  // namespace arenarpc::server
