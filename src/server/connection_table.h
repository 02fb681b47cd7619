#pragma once
// ConnectionTable: a server's open connections. Admits accepted connections up to
// max_connections, forgets closed ones, closes them all for Stop(), and gives observers a
// snapshot (one short lock; nothing of a connection is held past it).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "net/connection.h"
#include "stats/connection_info.h"

namespace arenarpc::server {

// What the table shows of a connection's server side (ServerConnection is one). Any thread.
class ServedConnection {
 public:
  virtual std::string_view protocol_name() const noexcept = 0;
  // Replies held for their turn, not yet handed to the connection (HTTP).
  virtual size_t held_reply_bytes() const noexcept = 0;

 protected:
  ~ServedConnection() = default;
};

class ConnectionTable {
 public:
  enum class AddResult { kAdded, kClosing, kFull };
  // `served`: the connection's server side (its delegate, alive as long as it).
  // `max_connections` 0 = unlimited.
  AddResult Add(std::shared_ptr<net::Connection> connection, const ServedConnection* served,
                int max_connections);
  void Remove(uint64_t id);
  // From now on Add() refuses; returns the connections open now.
  std::vector<std::shared_ptr<net::Connection>> StartClosing();
  // The connections open now.
  std::vector<std::shared_ptr<net::Connection>> Open() const;
  // Waits until every connection is gone or `deadline`; true if all are gone.
  bool WaitEmpty(std::chrono::steady_clock::time_point deadline);

  size_t size() const;
  // Unsent bytes of every connection (HTTP replies held for their turn included).
  uint64_t UnwrittenHeldBytes() const;
  // One row per open connection, by id.
  std::vector<stats::ConnectionInfo> Snapshot() const;

 private:
  std::vector<std::shared_ptr<net::Connection>> OpenLocked() const;  // mutex_ held

  struct Entry {
    std::shared_ptr<net::Connection> connection;
    const ServedConnection* served;
  };

  mutable std::mutex mutex_;
  std::unordered_map<uint64_t, Entry> connections_;
  bool closing_ = false;
  std::condition_variable empty_;
};

}  // namespace arenarpc::server
