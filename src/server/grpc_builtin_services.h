#pragma once
// The gRPC services every server adds to its own at Start() (docs/grpc.md, "Health" and
// "Reflection"):
//   grpc.health.v1.Health                          always;
//   grpc.reflection.v1 / v1alpha ServerReflection  when the built-in pages are served on the
//     main port (has_builtin_services, main_port_pages kAll, no internal_port): reflection
//     reveals the API as /status does, so it follows the same policy (and ServerOptions::auth,
//     as every gRPC call).
// A service the application registered under one of these names is served instead of ours.
// Registered by full name only (no short name), marked built-in: heap messages, not listed by
// Server::ListMethods().

#include <memory>

#include "arenarpc/server.h"

namespace arenarpc::server {

class ServiceRegistry;

class ServingStatusTable;

// Whether the pages policy of `options` lets the main port serve reflection.
bool ServesGrpcReflection(const ServerOptions& options);

// Adds the services (those not registered yet) and tells `health` which services exist.
void AddGrpcBuiltinServices(const ServerOptions& options, ServiceRegistry* registry,
                            const std::shared_ptr<ServingStatusTable>& health);

}  // namespace arenarpc::server
