// list://host:port[ weight[ tag]],...: a fixed list, parsed (and host names resolved) once.
#include "cluster/naming_service.h"

namespace arenarpc::cluster {
namespace {

class ListNaming final : public NamingService {
 public:
  explicit ListNaming(ServerList servers) : servers_(std::move(servers)) {}
  bool Start(Listener listener, std::string*) override {
    listener(servers_);
    return true;
  }
  void Stop() override {}

 private:
  const ServerList servers_;
};

}  // namespace

std::unique_ptr<NamingService> MakeListNaming(std::string_view target, const NamingOptions&,
                                              std::string* error) {
  ServerList servers;
  while (!target.empty()) {
    const size_t comma = target.find(',');
    const std::string_view entry = target.substr(0, comma);
    target = comma == std::string_view::npos ? std::string_view() : target.substr(comma + 1);
    if (entry.find_first_not_of(" \t") == std::string_view::npos) continue;
    ServerNode node;
    if (!ParseServerNode(entry, &node, error)) {
      *error = "list://: " + *error;
      return nullptr;
    }
    servers.push_back(std::move(node));
  }
  if (servers.empty()) {
    *error = "list:// names no server (expected list://host:port[ weight],...)";
    return nullptr;
  }
  Normalize(&servers);
  return std::make_unique<ListNaming>(std::move(servers));
}

}  // namespace arenarpc::cluster
