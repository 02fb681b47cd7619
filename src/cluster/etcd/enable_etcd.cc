#include "arenarpc/cluster/etcd.h"

#include "cluster/etcd/etcd_components.h"

namespace arenarpc {

bool EnableEtcd() {
  static const bool enabled = [] {
    cluster::RegisterNamingScheme("etcd", cluster::etcd::MakeEtcdNaming);
    cluster::RegisterRegistryScheme("etcd", cluster::etcd::MakeEtcdRegistration);
    return true;
  }();
  return enabled;
}

}  // namespace arenarpc
