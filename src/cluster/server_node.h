#pragma once
// ServerNode: one server a naming service lists — its address, its weight (wrr, default 1) and an
// optional tag. The text form shared by list://, file:// and etcd values is
// "host:port[ weight[ tag]]".

#include <asio/ip/tcp.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace arenarpc::cluster {

struct ServerNode {
  asio::ip::tcp::endpoint endpoint;
  int weight = 1;
  std::string tag;

  std::string address() const;  // "ip:port"
  bool operator==(const ServerNode& other) const = default;
};

using ServerList = std::vector<ServerNode>;

inline constexpr int kMaxServerWeight = 1000;

// Parses "host:port[ weight[ tag]]" (blank-separated; the host is resolved). Returns false with
// *error naming the problem.
bool ParseServerNode(std::string_view text, ServerNode* node, std::string* error);

// Sorted by address, duplicates (same endpoint) merged keeping the first: what load balancers get.
void Normalize(ServerList* servers);

}  // namespace arenarpc::cluster
