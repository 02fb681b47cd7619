#pragma once
// The Connect protocol's small wire facts (docs/http.md, "Browsers"): error codes as strings, the
// HTTP status of each, and the JSON error body of a unary call.

#include <string>
#include <string_view>

namespace arenarpc::protocol {

// A gRPC status number as Connect's code ("not_found"); "unknown" for a number it does not name.
std::string_view ConnectCodeName(int grpc_status) noexcept;
// The HTTP status a unary Connect error goes out with (Connect's table: not_found 404,
// unimplemented 501, resource_exhausted 429, ...).
int HttpStatusForConnectCode(int grpc_status) noexcept;
// {"code":"...","message":"..."} (message left out when empty).
std::string ConnectErrorJson(int grpc_status, std::string_view message);

}  // namespace arenarpc::protocol
