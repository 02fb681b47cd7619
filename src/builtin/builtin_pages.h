#pragma once
// The observability pages of a server: /status, /vars (and /vars/<prefix>), /metrics,
// /connections, /memory, /flags. docs/observability.md describes each.

#include <memory>

#include "builtin/builtin_registry.h"

namespace arenarpc::server {
struct ServerState;
}

namespace arenarpc::builtin {

// Registers every observability page. The pages hold `state` weakly (answer 503 once it is gone),
// so the registry may live inside the state.
void AddObservabilityPages(BuiltinRegistry* registry, std::shared_ptr<server::ServerState> state);

}  // namespace arenarpc::builtin
