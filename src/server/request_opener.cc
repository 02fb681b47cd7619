#include "server/request_opener.h"

#include "protocol/compression.h"
#include "protocol/payload_codec.h"
#include "server/connect_json.h"
#include "server/server_call.h"

namespace arenarpc::server {
namespace {

// An HTTP body, inflated as its Content-Encoding says (a baidu_std compress type: 2 gzip,
// 3 deflate).
bool OpenHttpBody(ServerCall& call, const RequestPayload& payload, size_t max_body_size,
                  protocol::PayloadBytes* bytes, std::string* error_text) {
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
  return OpenJsonRequest(call, body, bytes, error_text);
}

}  // namespace

bool OpenRequest(ServerCall& call, const RequestPayload& payload, size_t max_body_size,
                 protocol::PayloadBytes* bytes, std::string* error_text) {
  if (payload.body == RequestBody::kHttpBody) {
    return OpenHttpBody(call, payload, max_body_size, bytes, error_text);
  }
  std::string detail;
  if (!protocol::OpenPayload(payload.encoding, payload.bytes,
                             call.controller().request_attachment(), bytes, &detail,
                             max_body_size)) {
    // brpc's text, as for bytes that do not parse, and then why (a body that inflates past
    // max_body_size says so).
    *error_text = ParseFailureText(call, payload) + ": " + detail;
    return false;
  }
  if (!payload.json) return true;
  return OpenJsonRequest(call, bytes->bytes(), bytes, error_text);  // Connect JSON over HTTP/2
}

std::string ParseFailureText(const ServerCall& call, const RequestPayload& payload) {
  return protocol::ParseFailureText("request", call.request(), payload.encoding,
                                    payload.request_size);
}

}  // namespace arenarpc::server
