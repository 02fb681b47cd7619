#pragma once
// Opening an admitted call's request bytes for MessagePair::ParseRequest(): checked, inflated
// (never past max_body_size) and, for JSON, converted with the method's prototypes — from what
// the call's RequestPayload says alone, on the call's thread, whatever protocol decoded it.

#include <cstddef>
#include <string>

#include "arenarpc/buffer_chain.h"
#include "protocol/payload_bytes.h"
#include "protocol/payload_encoding.h"

namespace google::protobuf {
class Message;
}
namespace arenarpc::memory {
class RequestMemoryGate;
}

namespace arenarpc::server {

// How a request's bytes are opened.
enum class RequestBody {
  kRpcPayload,  // baidu_std, gRPC: as `encoding` says (compression, checksum, attachment)
  kHttpBody,    // HTTP: inflated as Content-Encoding says (encoding.compress_type)
};

// The request frame's parts that parsing needs (spec §5.1 step 10), set by the protocol as it
// decodes the call (DecodedCall): opening them needs nothing more of it. The attachment moves to
// the controller (CallFields) as the call is admitted.
struct RequestPayload {
  protocol::PayloadEncoding encoding;
  net::BufferChain bytes;       // as on the wire, maybe compressed
  size_t request_size = 0;      // payload + attachment bytes, for error texts
  RequestBody body = RequestBody::kRpcPayload;
  bool json = false;  // JSON (HTTP, Connect): converted with the method's prototypes once opened
};

// What opening needs of the call it is for.
struct RequestTarget {
  const net::BufferChain& attachment;             // the controller's request attachment
  const google::protobuf::Message& prototype;     // of the request's type (the method binding's)
  memory::RequestMemoryGate& memory_gate;         // max_request_memory, for a JSON body
};

// false: *error_text is the error to answer (EREQUEST); *too_large is set when it is a JSON body
// over max_request_memory.
bool OpenRequest(const RequestTarget& target, const RequestPayload& payload, size_t max_body_size,
                 protocol::PayloadBytes* bytes, std::string* error_text, bool* too_large);

// The EREQUEST text for request bytes the strategy could not parse (brpc's, spec §5.3).
std::string ParseFailureText(const google::protobuf::Message& request,
                             const RequestPayload& payload);

}  // namespace arenarpc::server
