#include "server/connection_table.h"

#include <algorithm>

namespace arenarpc::server {
namespace {

uint64_t HeldBytes(const net::Connection& connection, const ServedConnection& served) {
  return connection.unwritten_held_bytes() + served.held_reply_bytes();
}

}  // namespace

ConnectionTable::AddResult ConnectionTable::Add(std::shared_ptr<net::Connection> connection,
                                                const ServedConnection* served,
                                                int max_connections) {
  std::lock_guard lock(mutex_);
  if (closing_) return AddResult::kClosing;
  if (max_connections > 0 && connections_.size() >= static_cast<size_t>(max_connections)) {
    return AddResult::kFull;
  }
  const uint64_t id = connection->id();
  connections_.emplace(id, Entry{std::move(connection), served});
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
  for (const auto& [id, entry] : connections_) open.push_back(entry.connection);
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
  for (const auto& [id, entry] : connections_) bytes += HeldBytes(*entry.connection, *entry.served);
  return bytes;
}

std::vector<stats::ConnectionInfo> ConnectionTable::Snapshot() const {
  const auto now = net::Connection::Clock::now();
  std::vector<stats::ConnectionInfo> rows;
  {
    std::lock_guard lock(mutex_);
    rows.reserve(connections_.size());
    for (const auto& [id, entry] : connections_) {
      const net::Connection* connection = entry.connection.get();
      stats::ConnectionInfo row;
      row.id = id;
      row.remote = connection->remote_side();
      row.local = connection->local_side();
      row.protocol = std::string(entry.served->protocol_name());
      row.age_seconds = std::chrono::duration<double>(now - connection->created_at()).count();
      row.bytes_written = connection->bytes_written();
      row.unwritten_held_bytes = HeldBytes(*connection, *entry.served);
      rows.push_back(std::move(row));
    }
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return rows;
}

}  // namespace arenarpc::server
