#pragma once
// The library's own access to a Server's shared state (built-in pages, tests).
#include <memory>

#include "arenarpc/server.h"

namespace arenarpc::server {
struct ServerState;
}

namespace arenarpc::internal {

struct ServerAccess {
  static std::shared_ptr<server::ServerState> State(const Server& server);
};

}  // namespace arenarpc::internal
