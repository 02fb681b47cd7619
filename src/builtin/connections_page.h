#pragma once
// /connections: the server's open connections: id, remote and local address, protocol, age, bytes
// written, memory held by unsent replies, and each one's open streams (STRM and gRPC: method,
// age, messages and bytes each way, bytes buffered). Text table, or ?format=json.

#include <memory>

#include "builtin/builtin_registry.h"

namespace arenarpc::stats {
class ServerView;
}

namespace arenarpc::builtin {

void AddConnectionsPage(BuiltinRegistry* registry, std::shared_ptr<const stats::ServerView> view);

}  // namespace arenarpc::builtin
