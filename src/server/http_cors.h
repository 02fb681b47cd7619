#pragma once
// CORS for method calls from pages of other origins (ServerOptions::cors_*, docs/http.md,
// "Browsers: grpc-web and Connect"): which origins may call, a preflight's answer, and the
// headers a reply to such a call carries.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "arenarpc/server.h"

namespace arenarpc::server {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// The cors_allowed_origins entry `origin` matches — itself, or "*" — or nullptr: not allowed.
// What Access-Control-Allow-Origin says ("*" allows any page, without credentials).
const std::string* CorsMatch(const ServerOptions& options, std::string_view origin);
// A preflight's headers for an allowed origin (`allow_origin`: CorsMatch's entry): methods, the
// built-in request headers and cors_allowed_headers, max age.
void AddCorsPreflightHeaders(const ServerOptions& options, std::string_view allow_origin,
                             HeaderList* headers);
// A reply's headers for an allowed origin: Access-Control-Allow-Origin, the exposed gRPC and
// Connect headers.
void AddCorsReplyHeaders(std::string_view allow_origin, HeaderList* headers);

}  // namespace arenarpc::server
