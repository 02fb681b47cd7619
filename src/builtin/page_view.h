#pragma once
// How a built-in page reaches the server it describes: through its ServerView (copies, no
// server internals), answering 503 once the server is gone.

#include <functional>
#include <memory>

#include "builtin/builtin_service.h"
#include "stats/server_view.h"

namespace arenarpc::builtin {

using ViewPage =
    std::function<void(const stats::ServerView&, const BuiltinRequest&, BuiltinReply*)>;

inline BuiltinHandler BindView(std::shared_ptr<const stats::ServerView> view, ViewPage page) {
  return [view = std::move(view), page = std::move(page)](const BuiltinRequest& request,
                                                          BuiltinReply* reply) {
    if (!view->available()) {
      reply->status = 503;
      reply->body = "the server is gone\n";
      return;
    }
    page(*view, request, reply);
  };
}

}  // namespace arenarpc::builtin
