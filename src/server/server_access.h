#pragma once
// The library's own access to a Server from outside src/server/ (tests): the view its built-in
// pages read it through, and the face through which they change its live settings.
#include <memory>

#include "arenarpc/server.h"

namespace arenarpc::stats {
class ServerView;
class ServerSettings;
}
namespace arenarpc::capture {
class RequestCapture;
}

namespace arenarpc::internal {

struct ServerAccess {
  static std::shared_ptr<const stats::ServerView> View(const Server& server);
  // ServerOptions::capture of a started server; nullptr when off.
  static capture::RequestCapture* Capture(const Server& server);
  // The face /flags changes live settings through (the server's own pages get theirs at Start).
  static std::shared_ptr<stats::ServerSettings> Settings(const Server& server);
};

}  // namespace arenarpc::internal
