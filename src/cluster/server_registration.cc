#include "cluster/server_registration.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>

#include <map>
#include <mutex>

#include "cluster/server_node.h"

namespace arenarpc::cluster {
namespace {

struct RegistryTable {
  std::mutex mutex;
  std::map<std::string, RegistrationFactory, std::less<>> factories;
};

RegistryTable& Registries() {
  static RegistryTable table;
  return table;
}

std::string PrimaryIpv4() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "127.0.0.1";
  std::string found = "127.0.0.1";
  for (const ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr || it->ifa_addr->sa_family != AF_INET) continue;
    if ((it->ifa_flags & IFF_UP) == 0 || (it->ifa_flags & IFF_LOOPBACK) != 0) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* address = reinterpret_cast<const sockaddr_in*>(it->ifa_addr);
    if (::inet_ntop(AF_INET, &address->sin_addr, text, sizeof(text)) != nullptr) {
      found = text;
      break;
    }
  }
  ::freeifaddrs(list);
  return found;
}

}  // namespace

bool RegisterRegistryScheme(std::string scheme, RegistrationFactory factory) {
  RegistryTable& table = Registries();
  std::lock_guard lock(table.mutex);
  return table.factories.emplace(std::move(scheme), std::move(factory)).second;
}

std::unique_ptr<ServerRegistration> MakeServerRegistration(std::string_view url,
                                                           const RegistrationInfo& info,
                                                           std::string* error) {
  const size_t separator = url.find("://");
  if (separator == std::string_view::npos || separator == 0) {
    *error = "registry_url '" + std::string(url) + "' has no scheme (expected etcd://host:port/prefix)";
    return nullptr;
  }
  const std::string_view scheme = url.substr(0, separator);
  RegistrationFactory factory;
  {
    RegistryTable& table = Registries();
    std::lock_guard lock(table.mutex);
    if (auto it = table.factories.find(scheme); it != table.factories.end()) factory = it->second;
  }
  if (!factory) {
    *error = "registry_url scheme '" + std::string(scheme) + "://' is unknown" +
             (scheme == "etcd" ? ": etcd:// needs the arenarpc::etcd component (link it and "
                                 "include arenarpc/cluster/etcd.h; builds with ARENARPC_WITH_GRPC)"
                               : " (expected etcd://)");
    return nullptr;
  }
  return factory(url.substr(separator + 3), info, error);
}

std::string ValidateRegistrationOptions(std::chrono::milliseconds lease_ttl, int weight,
                                       std::string_view tag) {
  if (lease_ttl < std::chrono::seconds(1) || lease_ttl > std::chrono::hours(24)) {
    return "registry_lease_ttl=" + std::to_string(lease_ttl.count()) +
           " ms is invalid (expected 1 s .. 24 h)";
  }
  if (weight < 1 || weight > kMaxServerWeight) {
    return "registry_weight=" + std::to_string(weight) + " is invalid (expected 1.." +
           std::to_string(kMaxServerWeight) + ")";
  }
  if (tag.find_first_of(" \t\r\n") != std::string_view::npos) {
    return "registry_tag='" + std::string(tag) + "' is invalid (no blanks)";
  }
  return {};
}

std::string AdvertisedAddress(std::string_view listening_ip, int port) {
  std::string ip(listening_ip);
  if (ip.empty() || ip == "0.0.0.0" || ip == "::") ip = PrimaryIpv4();
  if (ip.find(':') != std::string::npos) ip = "[" + ip + "]";
  return ip + ":" + std::to_string(port);
}

}  // namespace arenarpc::cluster
