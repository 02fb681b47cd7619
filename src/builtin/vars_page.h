#pragma once
// /vars: every counter and gauge as `name : value` lines (brpc's format), sorted by name.
// /vars?prefix=rpc_server_ or /vars/rpc_server_ keeps the names starting with the prefix.

#include <memory>

#include "builtin/builtin_registry.h"

namespace arenarpc::stats {
class ServerView;
}

namespace arenarpc::builtin {

void AddVarsPage(BuiltinRegistry* registry, std::shared_ptr<const stats::ServerView> view);

}  // namespace arenarpc::builtin
