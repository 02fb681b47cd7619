#pragma once
// How a built-in page reaches the server it describes: it holds the state weakly (the registry may
// live inside that state) and answers 503 once the server is gone.

#include <memory>

#include "builtin/builtin_service.h"
#include "server/server_state.h"

namespace arenarpc::builtin {

using StatePage = std::function<void(server::ServerState&, const BuiltinRequest&, BuiltinReply*)>;

inline BuiltinHandler BindState(std::weak_ptr<server::ServerState> weak, StatePage page) {
  return [weak = std::move(weak), page = std::move(page)](const BuiltinRequest& request,
                                                          BuiltinReply* reply) {
    const std::shared_ptr<server::ServerState> state = weak.lock();
    if (!state) {
      reply->status = 503;
      reply->body = "the server is gone\n";
      return;
    }
    page(*state, request, reply);
  };
}

}  // namespace arenarpc::builtin
