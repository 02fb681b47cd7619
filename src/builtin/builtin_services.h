#pragma once
// The built-in services every server registers (when ServerOptions::has_builtin_services).
// Each page has its own file and one line in AddCoreBuiltinServices().

#include "builtin/builtin_registry.h"

#include <memory>

namespace arenarpc::stats {
class ServerView;
class ServerSettings;
}  // namespace arenarpc::stats

namespace arenarpc::builtin {

void AddCoreBuiltinServices(BuiltinRegistry* registry,
                            std::shared_ptr<const stats::ServerView> view,
                            std::shared_ptr<stats::ServerSettings> settings);

}  // namespace arenarpc::builtin
