#include "server/http_cors.h"

namespace arenarpc::server {

namespace {

// What grpc-web and Connect clients send (besides the metadata a page adds).
constexpr std::string_view kAllowedHeaders =
    "Content-Type, Content-Encoding, Accept-Encoding, Authorization, X-Grpc-Web, X-User-Agent, "
    "Grpc-Timeout, Grpc-Encoding, Grpc-Accept-Encoding, Connect-Protocol-Version, "
    "Connect-Timeout-Ms, Connect-Content-Encoding, Connect-Accept-Encoding, traceparent, "
    "tracestate, x-bd-timeout-ms, x-bd-log-id";
// Headers a page's script may read off a reply (a cross-origin reply shows it only the "safe"
// ones otherwise): grpc-web's status when it comes in headers, encodings.
constexpr std::string_view kExposedHeaders =
    "Grpc-Status, Grpc-Message, Grpc-Status-Details-Bin, Grpc-Encoding, Grpc-Accept-Encoding, "
    "Content-Encoding, Connect-Content-Encoding, Connect-Accept-Encoding, x-bd-error-code, "
    "x-bd-error-message";

}  // namespace

const std::string* CorsMatch(const ServerOptions& options, std::string_view origin) {
  for (const std::string& allowed : options.cors_allowed_origins) {
    if (allowed == "*" || allowed == origin) return &allowed;
  }
  return nullptr;
}

void AddCorsPreflightHeaders(const ServerOptions& options, std::string_view allow_origin,
                             HeaderList* headers) {
  std::string allowed(kAllowedHeaders);
  for (const std::string& name : options.cors_allowed_headers) allowed += ", " + name;
  headers->emplace_back("Access-Control-Allow-Origin", allow_origin);
  headers->emplace_back("Access-Control-Allow-Methods", "POST, GET, OPTIONS");
  headers->emplace_back("Access-Control-Allow-Headers", std::move(allowed));
  headers->emplace_back("Access-Control-Max-Age", std::to_string(options.cors_max_age.count()));
  headers->emplace_back("Vary", "Origin");
}

void AddCorsReplyHeaders(std::string_view allow_origin, HeaderList* headers) {
  headers->emplace_back("Access-Control-Allow-Origin", allow_origin);
  headers->emplace_back("Access-Control-Expose-Headers", kExposedHeaders);
  headers->emplace_back("Vary", "Origin");
}

}  // namespace arenarpc::server
