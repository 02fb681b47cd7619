#include "server/request_opener.h"

#include "protocol/compression.h"
#include "protocol/payload_codec.h"
#include "server/connect_json.h"

namespace arenarpc::server {
namespace {

// An HTTP body, inflated as its Content-Encoding says (a baidu_std compress type: 2 gzip,
// 3 deflate).
bool OpenHttpBody(const RequestTarget& target, const RequestPayload& payload,
                  size_t max_body_size, protocol::PayloadBytes* bytes, std::string* error_text,
                  bool* too_large) {
  const int compress_type = payload.encoding.compress_type;
  net::BufferChain inflated;
  const bool compressed = compress_type > 0 && !payload.bytes.empty();
  if (compressed) {
    // Inflating stops past max_body_size: a small body cannot make the server hold more.
    std::string detail;
    if (!protocol::Decompress(compress_type, payload.bytes, &inflated, &detail, max_body_size)) {
      *error_text = std::string("Content-Encoding: ") + (compress_type == 2 ? "gzip" : "deflate") +
                    " body does not inflate within max_body_size=" +
                    std::to_string(max_body_size) + ": " + detail;
      return false;
    }
  }
  const net::BufferChain& body = compressed ? inflated : payload.bytes;
  if (!payload.json || body.empty()) {  // binary, or no body: the empty message
    if (compressed) {
      bytes->Own(std::move(inflated));
    } else {
      bytes->Refer(payload.bytes);
    }
    return true;
  }
  return OpenJsonRequest(target.prototype, target.memory_gate, body, bytes, error_text,
                         too_large);
}

}  // namespace

bool OpenRequest(const RequestTarget& target, const RequestPayload& payload, size_t max_body_size,
                 protocol::PayloadBytes* bytes, std::string* error_text, bool* too_large) {
  if (payload.body == RequestBody::kHttpBody) {
    return OpenHttpBody(target, payload, max_body_size, bytes, error_text, too_large);
  }
  std::string detail;
  if (!protocol::OpenPayload(payload.encoding, payload.bytes, target.attachment, bytes, &detail,
                             max_body_size)) {
    // brpc's text, as for bytes that do not parse, and then why (a body that inflates past
    // max_body_size says so).
    *error_text = ParseFailureText(target.prototype, payload) + ": " + detail;
    return false;
  }
  if (!payload.json) return true;
  // Connect JSON over HTTP/2
  return OpenJsonRequest(target.prototype, target.memory_gate, bytes->bytes(), bytes, error_text,
                         too_large);
}

std::string ParseFailureText(const google::protobuf::Message& request,
                             const RequestPayload& payload) {
  return protocol::ParseFailureText("request", request, payload.encoding, payload.request_size);
}

}  // namespace arenarpc::server
