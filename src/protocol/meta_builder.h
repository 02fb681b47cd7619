#pragma once
// Building RpcMeta the way brpc >= 1.14 writes it (spec §2.2), and brpc's error texts (§5.3).
// Field order on the wire is field-number order (protobuf serializes that way); what matters is
// which fields are present: brpc writes compress_type, content_type, checksum_type and
// checksum_value even when they hold their defaults.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "arenarpc/buffer_chain.h"
#include "protocol/rpc_meta.pb.h"

namespace arenarpc::protocol {

// What a request says about its call (all optional parts are sent only when set, like brpc).
struct RequestMetaFields {
  std::string_view service_name;  // fully qualified, e.g. "example.EchoService"
  std::string_view method_name;   // e.g. "Echo"
  int64_t correlation_id = 0;
  int64_t log_id = 0;                                     // sent when != 0
  std::string_view request_id;                            // sent when non-empty
  int64_t trace_id = 0, span_id = 0, parent_span_id = 0;  // all three sent when trace_id != 0
  int32_t timeout_ms = 0;  // sent when > 0 (the caller's remaining budget)
  const std::map<std::string, std::string>* user_fields = nullptr;  // sent when non-empty
  std::optional<std::string_view> authentication_data;  // first request of a connection only
};

// How the payload that follows is encoded.
struct PayloadFields {
  int compress_type = 0;
  size_t attachment_size = 0;  // must equal the attachment's size; written only when > 0
  int checksum_type = 0;       // 0 none, 1 crc32c
  bool checksum_with_attachment = false;
};

// Request meta: request{...}, compress_type, correlation_id, [attachment_size], [user_fields],
// content_type=pb, checksum_type, checksum_value (computed over payload [+ attachment]).
// Returns false with *error for an unsupported checksum type or an attachment_size that is not
// attachment.size(); *meta is then unspecified.
bool BuildRequestMeta(const RequestMetaFields& call, const PayloadFields& payload_fields,
                      const net::BufferChain& payload, const net::BufferChain& attachment,
                      RpcMeta* meta, std::string* error);

// Successful reply meta: response{error_code=0}, compress_type, correlation_id, [attachment_size],
// [user_fields], content_type=pb, checksum_type, checksum_value.
bool BuildResponseMeta(int64_t correlation_id, const PayloadFields& payload_fields,
                       const net::BufferChain& payload, const net::BufferChain& attachment,
                       const std::map<std::string, std::string>* user_fields, RpcMeta* meta,
                       std::string* error);

// Error reply meta (§5.4): response{error_code, error_text}, compress_type=0, correlation_id,
// [user_fields], content_type=pb, checksum_type=0, checksum_value="". The frame that carries it
// has no payload, no attachment and no attachment_size. error_code must already be the wire code
// (see WireErrorCode).
void BuildErrorResponseMeta(int64_t correlation_id, int error_code, std::string_view error_text,
                            const std::map<std::string, std::string>* user_fields, RpcMeta* meta);

// Appends a whole error reply frame (meta only, body_size == meta_size) to *out.
void EncodeErrorResponse(int64_t correlation_id, int error_code, std::string_view error_text,
                         net::BufferChain* out);

// --- error texts (spec §5.3)

// Handler code -1 (SetFailed without a code) travels as EINTERNAL (2001); every other code as is.
int WireErrorCode(int handler_code) noexcept;
// "[<ip>:<port>]" — the prefix a brpc server puts before every error text it writes.
std::string ServerIdentity(std::string_view ip_port);
// "<identity>[E<code>]<message>"; code -1 omits "[E…]" ("<identity><message>").
std::string FormatErrorText(std::string_view identity, int handler_code, std::string_view message);

std::string NoServiceText(std::string_view service_name);  // "Fail to find service=Nope"
// "Fail to find method=example.EchoService/Foo"
std::string NoMethodText(std::string_view service_name, std::string_view method_name);
// "attachment_size=9 is larger than request_size=7" (what = "request" / "response")
std::string AttachmentTooLargeText(std::string_view what, int64_t attachment_size, size_t size);
std::string MaxConcurrencyText(int64_t max_concurrency);  // "Reached server's max_concurrency=N"
inline constexpr std::string_view kServerStoppingText = "Server is stopping";
inline constexpr std::string_view kAuthFailedText = "Fail to authenticate";  // brpc's, ERPCAUTH

}  // namespace arenarpc::protocol
