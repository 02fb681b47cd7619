#pragma once
// The etcd component's factories, registered by EnableEtcd() (arenarpc/cluster/etcd.h).

#include <memory>
#include <string>
#include <string_view>

#include "cluster/naming_service.h"
#include "cluster/server_registration.h"

namespace arenarpc::cluster::etcd {

std::unique_ptr<NamingService> MakeEtcdNaming(std::string_view target, const NamingOptions& options,
                                              std::string* error);
std::unique_ptr<ServerRegistration> MakeEtcdRegistration(std::string_view target,
                                                         const RegistrationInfo& info,
                                                         std::string* error);

}  // namespace arenarpc::cluster::etcd
