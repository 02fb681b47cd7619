#pragma once
// ServerPool: a cluster channel's servers. Follows its naming service: every new list becomes a
// set of SubChannels (a server that stays keeps its SubChannel, connections and health) handed to
// the load balancer; removed servers retire (their connections close once the calls in flight on
// them had time to finish).

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "arenarpc/channel.h"
#include "cluster/load_balancer.h"
#include "cluster/naming_service.h"

namespace arenarpc::client {

class ChannelCore;
class SubChannel;

class ServerPool {
 public:
  ServerPool(ChannelCore* core, std::unique_ptr<cluster::NamingService> naming,
             std::unique_ptr<cluster::LoadBalancer> balancer);
  ~ServerPool();

  // Starts the naming service (its first list is applied before this returns).
  bool Start(std::string* error);
  // Stops following the naming service and closes every server. Idempotent.
  void Close();

  std::shared_ptr<SubChannel> Select(uint64_t request_code,
                                     std::span<const cluster::ServerLoad* const> excluded);
  bool needs_request_code() const noexcept { return balancer_->needs_request_code(); }
  bool tracks_load() const noexcept { return balancer_->tracks_load(); }
  std::vector<ServerInfo> Servers() const;

 private:
  void OnServers(cluster::ServerList servers);

  ChannelCore* const core_;
  const std::unique_ptr<cluster::NamingService> naming_;
  const std::unique_ptr<cluster::LoadBalancer> balancer_;
  mutable std::mutex mutex_;
  bool closed_ = false;
  std::map<asio::ip::tcp::endpoint, std::shared_ptr<SubChannel>> current_;
  std::vector<std::shared_ptr<SubChannel>> retiring_;
};

}  // namespace arenarpc::client
