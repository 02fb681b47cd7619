#pragma once
// The observability pages of a server: /status, /vars (and /vars/<prefix>), /metrics,
// /connections, /memory, /flags. docs/observability.md describes each.

#include <memory>

#include "builtin/builtin_registry.h"

namespace arenarpc::stats {
class ServerView;
}

namespace arenarpc::builtin {

// Registers every observability page. The pages read the server through `view` (answering 503
// once the server is gone), so the registry may live inside the server.
void AddObservabilityPages(BuiltinRegistry* registry, std::shared_ptr<const stats::ServerView> view);

}  // namespace arenarpc::builtin
