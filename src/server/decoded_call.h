#pragma once
// DecodedCall / DecodedTask: all of one request as ServerProtocol::Next() hands it to admission,
// in no protocol's terms. Decoding is a one-way hand-off: admission moves an admitted call's parts
// into its ServerCall (with the call's AdmissionTicket) and an admitted task into the backlog, or
// drops a rejected one, whose members release what it holds — the protocol is not called back.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "arenarpc/buffer_chain.h"
#include "arenarpc/trace_context.h"
#include "capture/rpc_dump.pb.h"
#include "protocol/rpc_meta.pb.h"
#include "server/request_opener.h"

namespace arenarpc::stream {
class StreamHost;
}

namespace arenarpc::server {

class AdmittedTask;  // call_task.h; complete where a DecodedTask is destroyed
struct MethodEntry;  // service_registry.h

// What admission needs to know of one decoded request. Its views point into what the protocol
// keeps of the request until its next Next() (admission reads them before that).
struct CallHead {
  std::string_view service_name, method_name;  // resolved as spec §5.2
  // The method those names resolved to, where the protocol resolved them already (HTTP's router):
  // admission takes it instead of resolving again. nullptr: admission resolves the names.
  MethodEntry* method = nullptr;
  int64_t key = 0;       // identifies the reply: correlation_id (baidu_std), sequence (HTTP)
  int invalid_code = 0;  // != 0: the request is invalid; answered so once admitted
  std::string_view invalid_text;
  // ServerOptions::auth: the credential (authentication_data, Authorization). per_request:
  // verified on every call (HTTP, gRPC); else once, on the connection's first call (baidu_std).
  std::string_view credential;
  bool per_request_auth = false;
  // Served without a credential even with ServerOptions::auth (the built-in health Watch).
  bool without_auth = false;
  // More than one credential (two Authorization headers or metadata): refused whatever they say,
  // so that no proxy in front can have checked another one than the server.
  bool credential_repeated = false;
  // The client's deadline, counted from the read that completed the request (baidu_std
  // timeout_ms, gRPC grpc-timeout, HTTP x-bd-timeout-ms). Negative: none.
  int32_t timeout_ms = -1;
};

// The request's stream offer (baidu_std streaming, docs/streaming.md): offered to the handler
// through its Controller once the call is admitted.
struct StreamOffer {
  protocol::StreamSettings settings;         // the client's
  std::shared_ptr<stream::StreamHost> host;  // the connection's streams
};

// What the request sets in its call's Controller (ServerCall::TakeRequest()).
struct CallFields {
  int64_t log_id = 0;
  std::string request_id;
  TraceContext trace;  // set when valid()
  int request_compress_type = 0;  // the payload's (baidu_std, gRPC), as Controller shows it
  // User fields / metadata as received; the first of a repeated name is the one kept.
  std::vector<std::pair<std::string, std::string>> user_fields;
  net::BufferChain attachment;
  std::unique_ptr<StreamOffer> stream_offer;  // null: none
};

// A request ServerOptions::capture sampled as it was decoded: submitted once its call is admitted
// (capture_seam.h), dropped with a rejected one.
struct CaptureRecord {
  capture::RpcDumpMeta meta;
  std::string request;
  net::BufferChain shared_request;  // instead of `request`: a large one's blocks, not copied
  bool names_from_method = false;  // the service and method names are the admitted method's
};

// A method call (ServerProtocol::Step::kCall).
struct DecodedCall {
  CallHead head;
  CallFields fields;
  RequestPayload payload;  // the request's bytes and how to open them (request_opener.h)
  std::unique_ptr<CaptureRecord> capture;  // null: not sampled

  // Once the call was handed on (its parts moved out: fields by ServerCall::TakeRequest(), the
  // payload into the backlog, the capture record to the writer), what stays behind goes back to
  // how a new one starts, without allocating or releasing anything. Keep in step with the members.
  void ResetHandedOn() noexcept {
    head = CallHead();
    fields.log_id = 0;
    fields.request_id.clear();
    // In place: assigning a new TraceContext would move a string in and free one, every call.
    fields.trace.trace_id_high = fields.trace.trace_id = 0;
    fields.trace.span_id = fields.trace.parent_span_id = 0;
    fields.trace.flags = 0;
    fields.trace.tracestate.clear();
    fields.request_compress_type = 0;
    fields.user_fields.clear();  // their strings moved out
    fields.stream_offer.reset();  // its host moved out
    payload.encoding = protocol::PayloadEncoding();
    payload.request_size = 0;
    payload.body = RequestBody::kRpcPayload;
    payload.json = false;
    capture.reset();  // a record moved out
  }
};

// Other work admitted like a call (Step::kTask: an HTTP built-in page).
struct DecodedTask {
  int64_t key = 0;  // its reply, for a rejection
  std::unique_ptr<AdmittedTask> task;
  size_t request_size = 0;  // the request's bytes, counted in the backlog's bound
};

// What one Next() decoded: `call` after kCall, `task` after kTask (Next() writes it only when it
// answers one of them). The connection keeps one and reuses it request after request: one that
// was handed on is reset (DecodedCall::ResetHandedOn()), one that was rejected dropped — replaced
// by a new one, so that all it held is released at once.
struct Decoded {
  DecodedCall call;
  DecodedTask task;
};

}  // namespace arenarpc::server
