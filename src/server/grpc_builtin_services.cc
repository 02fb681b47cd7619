#include "server/grpc_builtin_services.h"

#include <google/protobuf/descriptor.h>

#include <string>
#include <vector>

#include "server/grpc_builtin_protos.h"
#include "server/grpc_health_service.h"
#include "server/grpc_reflection_service.h"
#include "server/serving_status_table.h"
#include "server/service_registry.h"

namespace arenarpc::server {

bool ServesGrpcReflection(const ServerOptions& options) {
  return options.has_builtin_services && options.main_port_pages == MainPortPages::kAll &&
         options.internal_port < 0;
}

void AddGrpcBuiltinServices(const ServerOptions& options, ServiceRegistry* registry,
                            const std::shared_ptr<ServingStatusTable>& health) {
  if (!registry->Contains(kHealthService)) {
    registry->AddBuiltin(MakeGrpcHealthService(health));
  }
  if (ServesGrpcReflection(options)) {
    auto index = std::make_shared<ReflectionIndex>();
    bool added = false;
    for (std::string_view name : {kReflectionV1Service, kReflectionV1AlphaService}) {
      if (registry->Contains(name)) continue;
      registry->AddBuiltin(MakeGrpcReflectionService(name, index));
      added = true;
    }
    if (added) index->Build(registry->Services());
  }
  std::vector<std::string> known;
  for (const google::protobuf::ServiceDescriptor* service : registry->Services()) {
    known.push_back(service->full_name());
  }
  health->SetKnown(std::move(known));
}

}  // namespace arenarpc::server
