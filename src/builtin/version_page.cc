#include "builtin/version_page.h"

#ifndef ARENARPC_VERSION_STRING
#error "ARENARPC_VERSION_STRING is set by src/CMakeLists.txt from PROJECT_VERSION"
#endif

namespace arenarpc::builtin {

void AddVersionPage(BuiltinRegistry* registry) {
  registry->Add("/version", "the arenarpc version",
                [](const BuiltinRequest& request, BuiltinReply* reply) {
                  auto format = request.query.find("format");
                  if (format != request.query.end() && format->second == "json") {
                    reply->content_type = "application/json";
                    reply->body = "{\"version\":\"" ARENARPC_VERSION_STRING "\"}";
                  } else {
                    reply->body = "arenarpc " ARENARPC_VERSION_STRING "\n";
                  }
                });
}

}  // namespace arenarpc::builtin
