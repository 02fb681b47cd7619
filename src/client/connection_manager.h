#pragma once
// How a channel maps calls to connections (spec §7.2):
//   single — one shared connection, any number of calls in flight; replaced when it fails;
//   pooled — one call per connection at a time, idle connections wait in a bounded pool;
//   short  — a new connection per call, closed when the call ends.
// Every live connection is registered here so that Shutdown() can close them all.

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "arenarpc/channel.h"

namespace arenarpc::client {

class ChannelCore;
class ClientConnection;
class SubChannel;

class ConnectionManager {
 public:
  using Kind = ConnectionType;
  // Connections of the server `sub` (which owns the manager).
  static std::unique_ptr<ConnectionManager> Create(ConnectionType connection_type,
                                                   ChannelCore* core, SubChannel* sub);
  ~ConnectionManager();

  Kind kind() const noexcept { return kind_; }
  // A connection for one attempt (connecting or connected); nullptr once shutting down.
  std::shared_ptr<ClientConnection> Acquire();
  // Loop thread of `connection`: its only call finished with a reply (pooled/short only).
  void OnExclusiveCallDone(const std::shared_ptr<ClientConnection>& connection);
  // Loop thread of `connection`: it closed. Called once per connection, before its calls fail.
  void OnClosed(ClientConnection* connection);
  // Closes every connection (their pending calls fail); new Acquire()s return nullptr.
  void CloseAll();
  // Closes the connections open now (their pending calls fail with code/text); later Acquire()s
  // open new ones.
  void CloseOpen(int code, const std::string& text);

 private:
  ConnectionManager(Kind kind, ChannelCore* core, SubChannel* sub)
      : kind_(kind), core_(core), sub_(sub) {}
  std::shared_ptr<ClientConnection> NewConnectionLocked();

  const Kind kind_;
  ChannelCore* const core_;
  SubChannel* const sub_;
  std::mutex mutex_;
  bool closed_ = false;
  std::shared_ptr<ClientConnection> single_;            // kSingle
  std::vector<std::shared_ptr<ClientConnection>> idle_;  // kPooled
  std::unordered_map<ClientConnection*, std::weak_ptr<ClientConnection>> live_;
};

}  // namespace arenarpc::client
