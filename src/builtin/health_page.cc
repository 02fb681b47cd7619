#include "builtin/health_page.h"

namespace arenarpc::builtin {

void AddHealthPage(BuiltinRegistry* registry) {
  registry->Add("/health", "whether the server answers",
                [](const BuiltinRequest& request, BuiltinReply* reply) {
                  auto format = request.query.find("format");
                  if (format != request.query.end() && format->second == "json") {
                    reply->content_type = "application/json";
                    reply->body = "{\"status\":\"OK\"}";
                  } else {
                    reply->body = "OK\n";
                  }
                });
}

}  // namespace arenarpc::builtin
