#pragma once
// The built-in services every server registers (when ServerOptions::has_builtin_services).
// Each page has its own file and one line in AddCoreBuiltinServices().

#include "builtin/builtin_registry.h"

namespace arenarpc {
class Server;
}

namespace arenarpc::builtin {

void AddCoreBuiltinServices(BuiltinRegistry* registry, const Server& server);

}  // namespace arenarpc::builtin
