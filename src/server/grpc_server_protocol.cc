#include "server/grpc_server_protocol.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <climits>

#include "arenarpc/error_codes.h"
#include "call/controller_access.h"
#include "protocol/payload_codec.h"
#include "server/call_task.h"
#include "server/cancel_state.h"
#include "server/server_call.h"
#include "server/server_connection.h"

namespace arenarpc::server {

namespace {

using protocol::h2::GrpcStatus;

constexpr std::string_view kHealthCheckPath = "/grpc.health.v1.Health/Check";

// "/pkg.Service/Method" -> its two segments; false for any other shape.
bool SplitMethodPath(std::string_view path, std::string_view* service, std::string_view* method) {
  if (path.size() < 4 || path[0] != '/') return false;
  const size_t slash = path.rfind('/');
  if (slash == 0 || slash + 1 == path.size()) return false;
  *service = path.substr(1, slash - 1);
  *method = path.substr(slash + 1);
  return true;
}

// grpc-encoding as a baidu_std compress type (gRPC's "deflate" is zlib); -1 unsupported.
int CompressTypeOf(std::string_view encoding) {
  if (encoding.empty()) return 0;
  if (encoding == "gzip") return 2;
  if (encoding == "deflate") return 3;
  return -1;
}

// grpc.health.v1.HealthCheckRequest's `service` (field 1); false: not such a message.
bool ParseHealthService(const net::BufferChain& message, std::string* service) {
  const std::string bytes = message.ToString();
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  while (const uint32_t tag = in.ReadTag()) {
    if (tag == 10) {
      if (!google::protobuf::internal::WireFormatLite::ReadString(&in, service)) return false;
    } else if (!google::protobuf::internal::WireFormatLite::SkipField(&in, tag)) {
      return false;
    }
  }
  return in.CurrentPosition() == static_cast<int>(bytes.size());  // not stopped by a 0 tag
}

}  // namespace

protocol::h2::GrpcServerSession::Limits GrpcServerProtocol::LimitsFor(
    const ServerOptions& options) {
  protocol::h2::GrpcServerSession::Limits limits;
  limits.max_concurrent_streams = static_cast<uint32_t>(
      std::max(1, options.max_queued_requests_per_connection));
  limits.max_header_list_bytes = options.max_http_header_size;
  limits.max_message_bytes = options.max_body_size;
  limits.request_bytes_budget = options.max_queued_request_bytes;
  return limits;
}

GrpcServerProtocol::GrpcServerProtocol(ServerState& state)
    : state_(state),
      max_body_size_(state.options.max_body_size),
      max_held_bytes_(state.options.max_unwritten_bytes),
      session_(LimitsFor(state.options)) {}

std::unique_ptr<ServerProtocol> GrpcServerProtocol::Create(ServerState& state,
                                                           ServerConnection& /*owner*/,
                                                           bool /*internal_port*/) {
  return std::make_unique<GrpcServerProtocol>(state);
}

void GrpcServerProtocol::PublishLocked() {
  held_bytes_.store(session_.held_bytes(), std::memory_order_release);
  in_request_.store(session_.InRequest(), std::memory_order_release);
}

void GrpcServerProtocol::MarkCanceled(std::vector<std::shared_ptr<CancelState>>* fire) {
  for (int32_t stream_id : session_.TakeCanceled()) {
    auto it = calls_.find(stream_id);
    if (it == calls_.end()) continue;
    it->second.canceled = true;
    if (auto cancel = it->second.cancel.lock()) fire->push_back(std::move(cancel));
  }
}

ServerProtocol::Step GrpcServerProtocol::Next(ServerConnection& server,
                                              net::Connection& connection,
                                              net::BufferChain& input,
                                              std::chrono::steady_clock::time_point read_at,
                                              std::unique_ptr<PendingCall>* call) {
  protocol::h2::GrpcRequest request;
  bool have = false, failed = false;
  std::vector<std::shared_ptr<CancelState>> fire;
  {
    std::lock_guard lock(mutex_);
    const uint64_t errors_before = session_.counters().connection_errors;
    if (!input.empty()) {
      failed = !session_.Receive(input);
      input.clear();
      MarkCanceled(&fire);
    }
    session_.TakeOutput(&unsent_);  // a GOAWAY for bad input counts as it is produced
    failed = failed || session_.counters().connection_errors != errors_before;
    if (failed) error_ = session_.error();
    if (!failed) have = session_.PopRequest(&request);
    PublishLocked();
  }
  for (const auto& cancel : fire) cancel->Fire();  // outside the lock: callbacks may reply
  Flush(connection);
  if (failed) return Step::kMalformedAnswered;  // GOAWAY is on its way; Flush() closes after it
  if (!have) return Step::kNeedMore;
  return Dispatch(server, connection, request, read_at, call);
}

ServerProtocol::Step GrpcServerProtocol::Dispatch(ServerConnection& server,
                                                  net::Connection& connection,
                                                  protocol::h2::GrpcRequest& request,
                                                  std::chrono::steady_clock::time_point read_at,
                                                  std::unique_ptr<PendingCall>* pending) {
  const int64_t key = request.stream_id;
  if (request.path == kHealthCheckPath) {
    AnswerHealth(connection, request);
    return Step::kAnswered;
  }
  std::string_view service, method;
  if (!SplitMethodPath(request.path, &service, &method)) {
    Fail(connection, key, GrpcStatus::kUnimplemented, "no method at path " + request.path);
    return Step::kAnswered;
  }
  const int compress_type = CompressTypeOf(request.encoding);
  if (compress_type < 0) {
    Fail(connection, key, GrpcStatus::kUnimplemented,
         "grpc-encoding " + request.encoding + " is not supported (gzip, deflate, identity)");
    return Step::kAnswered;
  }
  if (request.compressed && compress_type == 0) {
    Fail(connection, key, GrpcStatus::kInternal, "compressed message without grpc-encoding");
    return Step::kAnswered;
  }
  {
    std::lock_guard lock(mutex_);
    calls_[key].accepts_gzip = request.accepts_gzip;
  }
  ServerConnection::CallHead head;
  head.service_name = service;
  head.method_name = method;
  head.key = key;
  // ServerOptions::auth: the `authorization` metadata, per request (as HTTP's header).
  head.per_request_auth = true;
  for (const auto& [name, value] : request.metadata) {
    if (name == "authorization") head.credential = value;
  }
  std::unique_ptr<ServerCall> call = server.Admit(connection, head, read_at);
  if (!call) return Step::kAnswered;  // answered through SendError()

  Controller& controller = call->controller();
  if (request.timeout_ms >= 0) {
    internal::ControllerAccess::set_deadline_hint_ms(controller,
                                                     static_cast<int32_t>(request.timeout_ms));
  }
  const int wire_compress = request.compressed ? compress_type : 0;
  controller.set_request_compress_type(static_cast<CompressType>(wire_compress));
  for (auto& [name, value] : request.metadata) {
    controller.request_user_fields().emplace(std::move(name), std::move(value));
  }
  protocol::RpcMeta meta;
  meta.set_compress_type(wire_compress);
  const size_t request_size = request.message.size();
  *pending = server.Pending(std::move(call),
                            RequestPayload{std::move(meta), std::move(request.message),
                                           request_size});
  return Step::kCall;
}

void GrpcServerProtocol::AnswerHealth(net::Connection& connection,
                                      const protocol::h2::GrpcRequest& request) {
  std::string service;
  if (request.compressed || !ParseHealthService(request.message, &service)) {
    Fail(connection, request.stream_id, GrpcStatus::kInvalidArgument,
         "cannot parse grpc.health.v1.HealthCheckRequest");
    return;
  }
  bool known = service.empty();
  for (const auto& entry : state_.registry.methods()) {
    known = known || entry->descriptor->service()->full_name() == service;
  }
  if (!known) {
    Fail(connection, request.stream_id, GrpcStatus::kNotFound, "unknown service " + service);
    return;
  }
  // HealthCheckResponse{status: SERVING (1) | NOT_SERVING (2)}
  net::BufferChain response;
  response.Append(state_.admission.stopping() ? std::string_view("\x08\x02", 2)
                                              : std::string_view("\x08\x01", 2));
  {
    std::lock_guard lock(mutex_);
    session_.Respond(request.stream_id, std::move(response), false, {});
    PublishLocked();
  }
  Flush(connection);
}

bool GrpcServerProtocol::OpenRequest(ServerCall& call, const RequestPayload& payload,
                                     protocol::PayloadBytes* bytes, std::string* error_text) {
  return OpenMetaPayload(call, payload, bytes, error_text, max_body_size_);
}

bool GrpcServerProtocol::PackReply(ServerCall& call, const google::protobuf::Message& response,
                                   net::BufferChain* out) {
  Controller& controller = call.controller();
  bool accepts_gzip = false;
  {
    std::lock_guard lock(mutex_);
    auto it = calls_.find(call.correlation_id());
    if (it != calls_.end()) accepts_gzip = it->second.accepts_gzip;
  }
  int code = controller.ErrorCode();
  std::string text = controller.ErrorText();
  bool compressed = false;
  if (!controller.Failed()) {
    compressed = accepts_gzip && controller.response_compress_type() == COMPRESS_TYPE_GZIP;
    std::string error;
    if (protocol::SerializePayload(response, compressed ? 2 : 0, out, &error, "response")) {
      std::lock_guard lock(mutex_);
      auto it = calls_.find(call.correlation_id());
      if (it != calls_.end()) {
        it->second.compressed = compressed;
        it->second.metadata.assign(controller.response_user_fields().begin(),
                                   controller.response_user_fields().end());
      }
      return true;
    }
    code = ERESPONSE;
    text = std::move(error);
  }
  out->clear();
  std::lock_guard lock(mutex_);
  auto it = calls_.find(call.correlation_id());
  if (it != calls_.end()) {
    it->second.failed = true;
    it->second.status = protocol::h2::GrpcStatusForError(code);
    it->second.text = std::move(text);
  }
  return false;
}

void GrpcServerProtocol::SendReply(net::Connection& connection, int64_t key,
                                   net::BufferChain&& reply) {
  {
    std::lock_guard lock(mutex_);
    auto it = calls_.find(key);
    if (it == calls_.end()) return;
    const Call& call = it->second;
    const auto stream_id = static_cast<int32_t>(key);
    if (call.failed) {
      session_.Fail(stream_id, call.status, call.text);
    } else if (session_.held_bytes() > 0 &&
               session_.held_bytes() + reply.held_bytes() > max_held_bytes_) {
      // The client's windows do not take the replies already held: refuse rather than hold more.
      session_.Fail(stream_id, GrpcStatus::kResourceExhausted,
                    "replies waiting for the client's flow-control window reached the server's "
                    "max_unwritten_bytes=" + std::to_string(max_held_bytes_));
    } else {
      session_.Respond(stream_id, std::move(reply), call.compressed, call.metadata);
    }
    calls_.erase(it);
    PublishLocked();
  }
  Flush(connection);
}

void GrpcServerProtocol::Fail(net::Connection& connection, int64_t key, GrpcStatus status,
                              std::string_view text) {
  {
    std::lock_guard lock(mutex_);
    calls_.erase(key);
    session_.Fail(static_cast<int32_t>(key), status, text);
    PublishLocked();
  }
  Flush(connection);
}

void GrpcServerProtocol::SendError(net::Connection& connection, int64_t key, int code,
                                   std::string_view text) {
  Fail(connection, key, protocol::h2::GrpcStatusForError(code), text);
}

void GrpcServerProtocol::SendRequestTooLarge(net::Connection& connection, int64_t key,
                                             std::string_view text) {
  Fail(connection, key, GrpcStatus::kResourceExhausted, text);
}

bool GrpcServerProtocol::CallCanceled(int64_t key) {
  std::lock_guard lock(mutex_);
  auto it = calls_.find(key);
  return it != calls_.end() && it->second.canceled;
}

void GrpcServerProtocol::WatchCancel(int64_t key, const std::shared_ptr<CancelState>& state) {
  std::lock_guard lock(mutex_);
  auto it = calls_.find(key);
  if (it != calls_.end()) it->second.cancel = state;
}

void GrpcServerProtocol::OnServerStopping(net::Connection& connection) {
  {
    std::lock_guard lock(mutex_);
    session_.Shutdown();
  }
  Flush(connection);
}

void GrpcServerProtocol::Flush(net::Connection& connection) {
  std::unique_lock lock(mutex_);
  session_.TakeOutput(&unsent_);
  if (writing_) return;  // that thread writes these bytes too, in order
  writing_ = true;
  while (!unsent_.empty()) {
    net::BufferChain out = std::move(unsent_);
    unsent_.clear();
    lock.unlock();
    connection.Write(std::move(out));  // may close the connection and reply on this thread
    lock.lock();
    session_.TakeOutput(&unsent_);
  }
  writing_ = false;
  const bool close = session_.Finished();
  const bool issue = close && !close_issued_;
  close_issued_ = close_issued_ || close;
  PublishLocked();
  lock.unlock();
  if (issue) connection.CloseWhenFlushed();
}

}  // namespace arenarpc::server
