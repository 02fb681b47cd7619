#include "cluster/server_node.h"

#include <algorithm>
#include <charconv>

#include "net/endpoint.h"

namespace arenarpc::cluster {
namespace {

std::string_view NextWord(std::string_view* text) {
  const size_t begin = text->find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) {
    *text = {};
    return {};
  }
  const size_t end = text->find_first_of(" \t\r", begin);
  const std::string_view word = text->substr(begin, end - begin);
  *text = end == std::string_view::npos ? std::string_view() : text->substr(end);
  return word;
}

}  // namespace

std::string ServerNode::address() const { return net::EndpointToString(endpoint); }

bool ParseServerNode(std::string_view text, ServerNode* node, std::string* error) {
  std::string_view rest = text;
  const std::string_view address = NextWord(&rest);
  const std::string_view weight = NextWord(&rest);
  const std::string_view tag = NextWord(&rest);
  if (address.empty()) {
    *error = "empty server entry";
    return false;
  }
  if (!NextWord(&rest).empty()) {
    *error = "server entry '" + std::string(text) + "' has more than 'host:port weight tag'";
    return false;
  }
  ServerNode parsed;
  if (!net::ParseEndpoint(address, &parsed.endpoint, error)) return false;
  if (parsed.endpoint.port() == 0 || parsed.endpoint.address().is_unspecified()) {
    *error = "server '" + std::string(address) + "' needs a concrete host and a non-zero port";
    return false;
  }
  if (!weight.empty()) {
    const auto [end, ec] = std::from_chars(weight.data(), weight.data() + weight.size(),
                                           parsed.weight);
    if (ec != std::errc() || end != weight.data() + weight.size() || parsed.weight < 1 ||
        parsed.weight > kMaxServerWeight) {
      *error = "server '" + std::string(address) + "' has an invalid weight '" +
               std::string(weight) + "' (expected 1.." + std::to_string(kMaxServerWeight) + ")";
      return false;
    }
  }
  parsed.tag = std::string(tag);
  *node = std::move(parsed);
  return true;
}

void Normalize(ServerList* servers) {
  std::stable_sort(servers->begin(), servers->end(), [](const ServerNode& a, const ServerNode& b) {
    return a.endpoint < b.endpoint;
  });
  servers->erase(std::unique(servers->begin(), servers->end(),
                             [](const ServerNode& a, const ServerNode& b) {
                               return a.endpoint == b.endpoint;
                             }),
                 servers->end());
}

}  // namespace arenarpc::cluster
