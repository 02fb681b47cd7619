#include "builtin/index_page.h"

#include <cstdio>

namespace arenarpc::builtin {

namespace {

std::string JsonString(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

void AddIndexPage(BuiltinRegistry* registry) {
  registry->Add("/", "this list", [registry](const BuiltinRequest& request, BuiltinReply* reply) {
    const auto format = request.query.find("format");
    const bool json = format != request.query.end() && format->second == "json";
    std::string body = json ? "[" : "";
    bool first = true;
    for (const BuiltinRegistry::Entry& entry : registry->List()) {
      if (json) {
        body += (first ? "" : ",") + std::string("{\"path\":") + JsonString(entry.path) +
                ",\"description\":" + JsonString(entry.description) + "}";
      } else {
        body += entry.path + "  " + entry.description + "\n";
      }
      first = false;
    }
    if (json) {
      body += "]";
      reply->content_type = "application/json";
    }
    reply->body = std::move(body);
  });
}

}  // namespace arenarpc::builtin
