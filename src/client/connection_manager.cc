#include "client/connection_manager.h"

#include "arenarpc/error_codes.h"
#include "client/channel_core.h"
#include "client/client_connection.h"
#include "client/sub_channel.h"

namespace arenarpc::client {

std::unique_ptr<ConnectionManager> ConnectionManager::Create(ConnectionType connection_type,
                                                             ChannelCore* core,
                                                             SubChannel* sub) {
  return std::unique_ptr<ConnectionManager>(new ConnectionManager(connection_type, core, sub));
}

ConnectionManager::~ConnectionManager() = default;

std::shared_ptr<ClientConnection> ConnectionManager::NewConnectionLocked() {
  auto connection = ClientConnection::Create(core_, sub_->shared_from_this(), core_->loops().Next(),
                                             /*exclusive=*/kind_ != Kind::kSingle);
  live_.emplace(connection.get(), connection);
  return connection;
}

std::shared_ptr<ClientConnection> ConnectionManager::Acquire() {
  std::lock_guard lock(mutex_);
  if (closed_) return nullptr;
  switch (kind_) {
    case Kind::kSingle:
      if (!single_ || single_->closed() || single_->retiring()) single_ = NewConnectionLocked();
      return single_;
    case Kind::kPooled:
      while (!idle_.empty()) {
        std::shared_ptr<ClientConnection> connection = std::move(idle_.back());
        idle_.pop_back();
        if (!connection->closed()) return connection;
      }
      return NewConnectionLocked();
    case Kind::kShort:
      return NewConnectionLocked();
  }
  return nullptr;
}

void ConnectionManager::OnExclusiveCallDone(const std::shared_ptr<ClientConnection>& connection) {
  {
    std::lock_guard lock(mutex_);
    if (kind_ == Kind::kPooled && !closed_ &&
        idle_.size() < static_cast<size_t>(core_->options().max_pooled_connections)) {
      idle_.push_back(connection);
      return;
    }
  }
  connection->Close(EFAILEDSOCKET, "Connection closed after its call");
}

void ConnectionManager::OnClosed(ClientConnection* connection) {
  std::lock_guard lock(mutex_);
  live_.erase(connection);
  if (single_.get() == connection) single_.reset();
  std::erase_if(idle_, [connection](const auto& idle) { return idle.get() == connection; });
}

void ConnectionManager::CloseAll() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  CloseOpen(EFAILEDSOCKET, "Channel to the server is being destroyed");
}

void ConnectionManager::CloseOpen(int code, const std::string& text) {
  std::vector<std::shared_ptr<ClientConnection>> to_close;
  {
    std::lock_guard lock(mutex_);
    for (auto& [raw, weak] : live_) {
      if (auto connection = weak.lock()) to_close.push_back(std::move(connection));
    }
    single_.reset();
    idle_.clear();
  }
  for (auto& connection : to_close) connection->Close(code, text);
}

}  // namespace arenarpc::client
