#pragma once
// grpc-web's body on HTTP/1.1 and HTTP/2 (docs/http.md, "Browsers"): messages in gRPC's 5-byte
// envelope (flag, big-endian length), then one trailers frame — flag 0x80, its payload the
// trailers as "name:value\r\n" lines. grpc-web-text is the same body in base64.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace arenarpc::protocol {

inline constexpr uint8_t kGrpcWebTrailersFlag = 0x80;
inline constexpr uint8_t kGrpcWebCompressedFlag = 0x01;

// gRPC's envelope, which Connect's streaming bodies use too: `flag`, big-endian length, payload.
void AppendEnvelope(uint8_t flag, std::string_view payload, std::string* out);

// The one message of a unary grpc-web request body (or a Connect server-streaming request's). false: *error says why (shorter than an
// envelope, an envelope whose length is not the rest of the body, a flag other than 0 or 1).
bool UnframeGrpcWebRequest(std::string_view body, std::string_view* message, bool* compressed,
                           std::string* error);
// A message frame / the trailers frame (grpc-status, percent-encoded grpc-message when not
// empty, then `extra` trailers) appended to *out.
void AppendGrpcWebMessage(std::string_view message, bool compressed, std::string* out);
void AppendGrpcWebTrailers(int grpc_status, std::string_view message,
                           const std::vector<std::pair<std::string, std::string>>& extra,
                           std::string* out);
// The trailers frame of fields already encoded as header values (grpc-status, grpc-message, ...).
void AppendGrpcWebTrailerFields(const std::vector<std::pair<std::string, std::string>>& fields,
                                std::string* out);

}  // namespace arenarpc::protocol
