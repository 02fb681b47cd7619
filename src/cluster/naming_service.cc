#include "cluster/naming_service.h"

#include <map>
#include <mutex>

namespace arenarpc::cluster {
namespace {

struct SchemeTable {
  std::mutex mutex;
  std::map<std::string, NamingFactory, std::less<>> factories{
      {"list", MakeListNaming}, {"file", MakeFileNaming}, {"dns", MakeDnsNaming}};
};

SchemeTable& Schemes() {
  static SchemeTable table;
  return table;
}

}  // namespace

bool RegisterNamingScheme(std::string scheme, NamingFactory factory) {
  SchemeTable& table = Schemes();
  std::lock_guard lock(table.mutex);
  return table.factories.emplace(std::move(scheme), std::move(factory)).second;
}

std::unique_ptr<NamingService> MakeNamingService(std::string_view url, const NamingOptions& options,
                                                 std::string* error) {
  const size_t separator = url.find("://");
  if (separator == std::string_view::npos || separator == 0) {
    *error = "naming service URL '" + std::string(url) +
             "' has no scheme (expected list://, file://, dns:// or etcd://)";
    return nullptr;
  }
  const std::string_view scheme = url.substr(0, separator);
  NamingFactory factory;
  {
    SchemeTable& table = Schemes();
    std::lock_guard lock(table.mutex);
    if (auto it = table.factories.find(scheme); it != table.factories.end()) factory = it->second;
  }
  if (!factory) {
    *error = "naming service scheme '" + std::string(scheme) + "://' is unknown (expected list://, " +
             "file://, dns:// or etcd://" +
             (scheme == "etcd" ? "; etcd:// needs the arenarpc::etcd component: link it and "
                                 "include arenarpc/cluster/etcd.h (builds with ARENARPC_WITH_GRPC)"
                               : "") +
             ")";
    return nullptr;
  }
  return factory(url.substr(separator + 3), options, error);
}

}  // namespace arenarpc::cluster
