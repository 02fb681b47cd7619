#pragma once
// /flags: the server's effective ServerOptions as `name = value` lines (read-only).

#include <memory>
#include <string>

#include "builtin/builtin_registry.h"

namespace arenarpc {
struct ServerOptions;
}
namespace arenarpc::stats {
class ServerView;
}

namespace arenarpc::builtin {

void AddFlagsPage(BuiltinRegistry* registry, std::shared_ptr<const stats::ServerView> view);

// The lines /flags serves.
std::string FormatServerOptions(const ServerOptions& options);

}  // namespace arenarpc::builtin
