#include "client/server_pool.h"

#include <algorithm>

#include "client/channel_core.h"
#include "client/sub_channel.h"

namespace arenarpc::client {

ServerPool::ServerPool(ChannelCore* core, std::unique_ptr<cluster::NamingService> naming,
                       std::unique_ptr<cluster::LoadBalancer> balancer)
    : core_(core), naming_(std::move(naming)), balancer_(std::move(balancer)) {}

ServerPool::~ServerPool() { Close(); }

bool ServerPool::Start(std::string* error) {
  return naming_->Start([this](cluster::ServerList servers) { OnServers(std::move(servers)); },
                        error);
}

void ServerPool::Close() {
  naming_->Stop();  // no OnServers() after this
  std::vector<std::shared_ptr<SubChannel>> to_close;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
    for (auto& [endpoint, server] : current_) to_close.push_back(server);
    to_close.insert(to_close.end(), retiring_.begin(), retiring_.end());
    current_.clear();
    retiring_.clear();
  }
  balancer_->Reset({});
  for (auto& server : to_close) server->Close();
}

void ServerPool::OnServers(cluster::ServerList servers) {
  std::vector<cluster::ServerPtr> for_balancer;
  std::vector<std::shared_ptr<SubChannel>> removed;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    std::map<asio::ip::tcp::endpoint, std::shared_ptr<SubChannel>> next;
    for (cluster::ServerNode& node : servers) {
      // A server that stays (same address, weight and tag) keeps its SubChannel.
      std::shared_ptr<SubChannel> server;
      if (auto it = current_.find(node.endpoint); it != current_.end() && it->second->node() == node) {
        server = std::move(it->second);
        current_.erase(it);
      } else {
        server = std::make_shared<SubChannel>(core_, std::move(node), /*health_checked=*/true);
      }
      next.emplace(server->endpoint(), server);
      for_balancer.push_back(std::move(server));
    }
    for (auto& [endpoint, server] : current_) removed.push_back(server);
    current_ = std::move(next);
    std::erase_if(retiring_, [](const auto& server) { return server->closed(); });
    retiring_.insert(retiring_.end(), removed.begin(), removed.end());
    // Under the lock: two lists applied in the order they came.
    balancer_->Reset(std::move(for_balancer));
  }
  // Calls already sent to a removed server may finish within their timeout.
  const int64_t timeout = core_->options().timeout_ms;
  const auto grace = std::chrono::milliseconds(timeout > 0 ? std::min<int64_t>(timeout, 10000) : 10000);
  for (auto& server : removed) server->Retire(grace);
}

std::shared_ptr<SubChannel> ServerPool::Select(
    uint64_t request_code, std::span<const cluster::ServerLoad* const> excluded) {
  cluster::SelectInput input;
  input.request_code = request_code;
  input.excluded = excluded;
  return std::static_pointer_cast<SubChannel>(balancer_->Select(input));
}

std::vector<ServerInfo> ServerPool::Servers() const {
  std::vector<ServerInfo> out;
  std::lock_guard lock(mutex_);
  for (const auto& [endpoint, server] : current_) {
    out.push_back(ServerInfo{server->remote_side(), server->node().weight, server->node().tag,
                             server->healthy(), server->selected()});
  }
  return out;
}

}  // namespace arenarpc::client
