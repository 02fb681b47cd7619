#pragma once
// The observability pages of a server: /status, /vars (and /vars/<prefix>), /metrics,
// /connections, /memory, /flags. docs/observability.md describes each.

#include <memory>

#include "builtin/builtin_registry.h"

namespace arenarpc::stats {
class ServerView;
class ServerSettings;
}  // namespace arenarpc::stats

namespace arenarpc::builtin {

// Registers every observability page. The pages read the server through `view` (answering 503
// once the server is gone), so the registry may live inside the server.
// /flags changes live settings through `settings`.
void AddObservabilityPages(BuiltinRegistry* registry, std::shared_ptr<const stats::ServerView> view,
                           std::shared_ptr<stats::ServerSettings> settings);

}  // namespace arenarpc::builtin
