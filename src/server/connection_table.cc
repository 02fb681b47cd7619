#include "server/connection_table.h"

#include <algorithm>

#include "server/server_connection.h"

namespace arenarpc::server {
namespace {

const ServerConnection& ServerSide(const net::Connection& connection) {
  return static_cast<const ServerConnection&>(connection.delegate());
}

uint64_t HeldBytes(const net::Connection& connection) {
  return connection.unwritten_held_bytes() + ServerSide(connection).held_reply_bytes();
}

}  // namespace

ConnectionTable::AddResult ConnectionTable::Add(std::shared_ptr<net::Connection> connection,
                                                int max_connections) {
  std::lock_guard lock(mutex_);
  if (closing_) return AddResult::kClosing;
  if (max_connections > 0 && connections_.size() >= static_cast<size_t>(max_connections)) {
    return AddResult::kFull;
  }
  const uint64_t id = connection->id();
  connections_.emplace(id, std::move(connection));
  return AddResult::kAdded;
}

void ConnectionTable::Remove(uint64_t id) {
  std::lock_guard lock(mutex_);
  connections_.erase(id);
  if (connections_.empty()) empty_.notify_all();
}

std::vector<std::shared_ptr<net::Connection>> ConnectionTable::StartClosing() {
  std::lock_guard lock(mutex_);
  closing_ = true;
  return OpenLocked();
}

std::vector<std::shared_ptr<net::Connection>> ConnectionTable::Open() const {
  std::lock_guard lock(mutex_);
  return OpenLocked();
}

std::vector<std::shared_ptr<net::Connection>> ConnectionTable::OpenLocked() const {
  std::vector<std::shared_ptr<net::Connection>> open;
  open.reserve(connections_.size());
  for (const auto& [id, connection] : connections_) open.push_back(connection);
  return open;
}

bool ConnectionTable::WaitEmpty(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  return empty_.wait_until(lock, deadline, [&] { return connections_.empty(); });
}

size_t ConnectionTable::size() const {
  std::lock_guard lock(mutex_);
  return connections_.size();
}

uint64_t ConnectionTable::UnwrittenHeldBytes() const {
  std::lock_guard lock(mutex_);
  uint64_t bytes = 0;
  for (const auto& [id, connection] : connections_) bytes += HeldBytes(*connection);
  return bytes;
}

std::vector<stats::ConnectionInfo> ConnectionTable::Snapshot() const {
  const auto now = net::Connection::Clock::now();
  std::vector<stats::ConnectionInfo> rows;
  {
    std::lock_guard lock(mutex_);
    rows.reserve(connections_.size());
    for (const auto& [id, connection] : connections_) {
      stats::ConnectionInfo row;
      row.id = id;
      row.remote = connection->remote_side();
      row.local = connection->local_side();
      row.protocol = std::string(ServerSide(*connection).protocol_name());
      row.age_seconds = std::chrono::duration<double>(now - connection->created_at()).count();
      row.bytes_written = connection->bytes_written();
      row.unwritten_held_bytes = HeldBytes(*connection);
      rows.push_back(std::move(row));
    }
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return rows;
}

}  // namespace arenarpc::server
