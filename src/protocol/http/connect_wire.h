#pragma once
// The Connect protocol's small wire facts (docs/http.md, "Browsers"): error codes as strings, the
// HTTP status of each, and the JSON error body of a unary call.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace arenarpc::protocol {

// A gRPC status number as Connect's code ("not_found"); "unknown" for a number it does not name.
std::string_view ConnectCodeName(int grpc_status) noexcept;
// The HTTP status a unary Connect error goes out with (Connect's table: not_found 404,
// unimplemented 501, resource_exhausted 429, ...).
int HttpStatusForConnectCode(int grpc_status) noexcept;
// {"code":"...","message":"...","details":[{"type":"...","value":"..."}]}: message left out when
// empty; details from `status_details`, a serialized google.rpc.Status (a handler's
// grpc-status-details-bin), each Any as its message name and its bytes in unpadded base64, as
// Connect's protocol has them — left out when there are none or the bytes do not parse.
std::string ConnectErrorJson(int grpc_status, std::string_view message,
                             std::string_view status_details = {});

// Headers of the transport, the browser or the protocols themselves (host, origin, accept,
// connect-*, grpc-*, sec-*, ...): not a grpc-web or Connect call's metadata.
bool IsWebTransportHeader(std::string_view name) noexcept;

// A Connect unary GET (for methods without side effects): the query
// "connect=v1&encoding=proto|json[&compression=gzip][&base64=1]&message=...".
struct ConnectGetQuery {
  bool json = false;
  std::string compression;  // "" (or "identity"): the message is not compressed
  std::string message;      // the request message's bytes
};
// The query names a Connect call: a `connect=v1` or `encoding=` parameter.
bool IsConnectGetQuery(std::string_view query);
// false: *error says why (no or an unknown encoding, a message that is not base64).
bool ParseConnectGetQuery(std::string_view query, ConnectGetQuery* out, std::string* error);

// A streaming body's last envelope carries this flag and the end-of-stream JSON.
inline constexpr uint8_t kConnectEndStreamFlag = 0x02;

// The content types of Connect's unary calls (and of the HTTP/JSON and protobuf bodies).
inline constexpr std::string_view kJsonType = "application/json";
inline constexpr std::string_view kProtoType = "application/proto";

// {} on success; {"error":{...},"metadata":{"name":["value"]}} (each part when there is one; the
// error as ConnectErrorJson).
std::string ConnectEndStreamJson(int grpc_status, std::string_view message,
                                 const std::vector<std::pair<std::string, std::string>>& metadata,
                                 std::string_view status_details = {});

}  // namespace arenarpc::protocol
