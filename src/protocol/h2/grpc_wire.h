#pragma once
// gRPC's small wire facts over HTTP/2 (docs/grpc.md): status codes, brpc error codes mapped to
// them as brpc maps them, grpc-timeout values, grpc-message percent-encoding, the 5-byte message
// prefix.

#include <cstdint>
#include <string>
#include <string_view>

#include "arenarpc/buffer_chain.h"

namespace arenarpc::protocol::h2 {

enum class GrpcStatus : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kUnauthenticated = 16,
};

// A brpc/arenarpc error code (arenarpc/error_codes.h) as the gRPC status brpc sends for it.
GrpcStatus GrpcStatusForError(int error_code) noexcept;
// ... with the status text gRPC servers send: an unknown service or method (the registry's text
// ends "=pkg.Service/Method") is UNIMPLEMENTED "Method not found: pkg.Service/Method" (grpc-java's
// words); other texts as they are.
GrpcStatus GrpcStatusForError(int error_code, std::string_view text, std::string* grpc_text);

// A gRPC status (any number) as the error code brpc's client reports for it (brpc's
// GrpcStatusToErrorCode); 0 for OK.
int ErrorCodeForGrpcStatus(int grpc_status) noexcept;

// "grpc-timeout" ("<1..8 digits><H|M|S|m|u|n>") in milliseconds, rounded up, capped at INT32_MAX;
// -1 when the value is malformed.
int64_t ParseGrpcTimeoutMs(std::string_view value) noexcept;

// What a server and client take in grpc-encoding, sent as grpc-accept-encoding.
inline constexpr std::string_view kAcceptedEncodings = "identity,deflate,gzip";
// A failed call's rich status (a serialized google.rpc.Status), base64 in a binary header.
inline constexpr std::string_view kStatusDetailsHeader = "grpc-status-details-bin";

// A binary ("-bin") header value as gRPC sends it: base64 without padding.
std::string EncodeBinaryHeader(std::string_view bytes);
// Its inverse (padded values too); false: not base64.
bool DecodeBinaryHeader(std::string_view value, std::string* bytes);

// grpc-message's percent-encoding: bytes outside 0x20..0x7e and '%' as %XX.
std::string PercentEncode(std::string_view text);
// Its inverse; a '%' not followed by two hex digits stays as it is.
std::string PercentDecode(std::string_view text);

// The metadata carrying a call's credential (ServerOptions::auth / ChannelOptions::auth).
inline constexpr std::string_view kAuthorizationMetadata = "authorization";
inline constexpr size_t kMessagePrefixSize = 5;  // compressed flag + big-endian length
void EncodeMessagePrefix(bool compressed, uint32_t length, char out[kMessagePrefixSize]) noexcept;
// The length in the prefix at the front of `body` (which holds at least kMessagePrefixSize bytes).
uint32_t DecodeMessageLength(const net::BufferChain& body) noexcept;

// Headers gRPC itself defines, or HTTP/2's own: not a call's metadata.
bool IsReservedHeader(std::string_view name) noexcept;

}  // namespace arenarpc::protocol::h2
