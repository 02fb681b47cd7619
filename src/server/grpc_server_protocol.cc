#include "server/grpc_server_protocol.h"

#include <asio/post.hpp>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <climits>
#include <limits>

#include "arenarpc/error_codes.h"
#include "arenarpc/grpc_stream.h"
#include "call/trace_headers.h"
#include "protocol/compression.h"
#include "protocol/http/json_message.h"
#include "protocol/payload_codec.h"
#include "server/call_task.h"
#include "server/capture_seam.h"
#include "server/cancel_state.h"
#include "server/connect_json.h"
#include "server/http_cors.h"
#include "server/method_entry.h"
#include "server/server_call.h"

namespace arenarpc::server {

namespace {

using protocol::h2::GrpcStatus;
using protocol::h2::WireKind;

// HTTP/2 field names are lower case (RFC 9113 8.2.1): the CORS helpers write them capitalized.
void LowerCaseNames(HeaderList* headers, size_t from) {
  for (size_t i = from; i < headers->size(); ++i) {
    for (char& c : (*headers)[i].first) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
  }
}

constexpr std::string_view kHealthCheckPath = "/grpc.health.v1.Health/Check";
constexpr std::string_view kHealthWatchPath = "/grpc.health.v1.Health/Watch";

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
  limits.stream_window = options.http2_stream_window;
  limits.connection_window = options.http2_connection_window;
  limits.max_window = options.http2_max_window;
  limits.max_frame_size = options.http2_max_frame_size;
  return limits;
}

GrpcServerProtocol::GrpcServerProtocol(ServerState& state)
    : state_(state),
      max_body_size_(state.config.options.max_body_size),
      max_held_bytes_(state.config.options.max_unwritten_bytes),
      session_(LimitsFor(state.config.options)) {
  for (const auto& entry : state_.config.registry.methods()) {
    has_stream_methods_ = has_stream_methods_ ||
                          dynamic_cast<const GrpcStreamService*>(entry->service) != nullptr;
  }
  const MethodEntry* check = state_.config.registry.FindMethod("grpc.health.v1.Health.Check");
  builtin_health_ = check != nullptr && check->builtin;
  if (!state_.config.options.cors_allowed_origins.empty()) {
    session_.set_origin_headers([&options = state_.config.options](std::string_view origin,
                                                                   HeaderList* headers) {
      if (const std::string* allowed = CorsMatch(options, origin)) {
        const size_t from = headers->size();
        AddCorsReplyHeaders(*allowed, headers);
        LowerCaseNames(headers, from);
      }
    });
  }
  if (has_stream_methods_) {
    session_.set_streaming_predicate([&registry = state_.config.registry](std::string_view path) {
      return registry.IsGrpcStreamPath(path);
    });
  }
}

std::unique_ptr<ServerProtocol> GrpcServerProtocol::Create(ServerState& state,
                                                           ProtocolOwner& /*owner*/,
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
    MarkCanceledLocked(it->second);
    if (it->second.stream) it->second.stream->changed.notify_all();
    if (auto cancel = it->second.cancel.lock()) fire->push_back(std::move(cancel));
  }
}

ServerProtocol::Step GrpcServerProtocol::Next(net::Connection& connection, net::BufferChain& input,
                                              std::chrono::steady_clock::time_point read_at,
                                              Decoded* decoded) {
  // The last request stays until the session moves the next one in: its call's CallHead points
  // into it.
  protocol::h2::GrpcRequest& request = request_;
  bool have = false, failed = false;
  std::vector<std::shared_ptr<CancelState>> fire;
  {
    std::lock_guard lock(mutex_);
    const uint64_t errors_before = session_.counters().connection_errors;
    if (!input.empty() && input_this_turn_ < kInputPerTurn) {
      const size_t before = input.size();
      failed = !session_.ReceiveSome(input, kInputPerTurn - input_this_turn_);
      input_this_turn_ += before - input.size();
      if (failed) input.clear();
      MarkCanceled(&fire);
      if (session_.HasReadable()) WakeLocked(session_.TakeReadable());
    }
    TakeOutputLocked(connection);  // a GOAWAY for bad input counts as it is produced
    failed = failed || session_.counters().connection_errors != errors_before;
    if (failed) error_ = session_.error();
    if (!failed) have = session_.PopRequest(&request);
    PublishLocked();
  }
  for (const auto& cancel : fire) cancel->Fire();  // outside the lock: callbacks may reply
  Flush(connection);
  if (failed) return Step::kMalformedAnswered;  // GOAWAY is on its way; Flush() closes after it
  if (!have) {
    const bool more = !input.empty();
    input_this_turn_ = 0;  // the next OnInput is a new turn
    return more ? Step::kYield : Step::kNeedMore;
  }
  const Step step = Dispatch(connection, read_at, &decoded->call);
  if (step != Step::kCall) request_ = protocol::h2::GrpcRequest();  // answered: nothing to keep
  return step;
}

ServerProtocol::Step GrpcServerProtocol::Dispatch(net::Connection& connection,
                                                  std::chrono::steady_clock::time_point read_at,
                                                  DecodedCall* call) {
  protocol::h2::GrpcRequest& request = request_;
  const int64_t key = request.stream_id;
  if (request.kind == WireKind::kPreflight) {
    AnswerPreflight(connection, request);
    return Step::kAnswered;
  }
  if (request.path == kHealthCheckPath && builtin_health_ && request.kind == WireKind::kGrpc) {
    AnswerHealth(connection, request);
    return Step::kAnswered;
  }
  std::string_view service, method;
  if (!SplitMethodPath(request.path, &service, &method)) {
    Fail(connection, key, GrpcStatus::kUnimplemented, "Method not found: " + request.path);
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
  if (request.kind == WireKind::kConnectStream && !request.streaming) {
    const std::string name = std::string(service) + "." + std::string(method);
    if (state_.config.registry.FindMethod(name) != nullptr) {  // unknown ones: not found
      Fail(connection, key, GrpcStatus::kInvalidArgument,
           "application/connect+proto|json calls streaming rpcs; " + name +
               " is unary (application/proto or application/json)");
      return Step::kAnswered;
    }
  }
  if (request.get) {  // Connect's GET: only for methods without side effects
    const std::string name = std::string(service) + "." + std::string(method);
    const MethodEntry* entry = state_.config.registry.FindMethod(name);
    if (entry != nullptr && !HasNoSideEffects(*entry)) {
      {
        std::lock_guard lock(mutex_);
        session_.RespondPlain(request.stream_id, 405,
                              {{"allow", "POST"}, {"content-type", "text/plain"}},
                              std::string(ConnectGetRefusal(name)));
        PublishLocked();
      }
      Flush(connection);
      return Step::kAnswered;
    }
  }
  // Connect's JSON streams convert their messages with the method's prototypes.
  std::shared_ptr<MethodBinding> binding;
  if (request.streaming && request.json) {
    int code = 0;
    std::string text;
    if (MethodEntry* entry = state_.config.registry.Resolve(service, method, &code, &text)) {
      binding = entry->Binding();
    }
  }
  {
    std::lock_guard lock(mutex_);
    Call& entry = calls_[key];
    entry.accepts_gzip = request.accepts_gzip;
    entry.json = request.json;
    if (request.streaming) {
      if (!entry.stream) stream_calls_.fetch_add(1, std::memory_order_release);
      entry.stream = std::make_shared<StreamWaits>();
      entry.stream->connection = &connection;
      entry.stream->compress_type = compress_type;
      entry.stream->json = request.json;
      entry.stream->binding = std::move(binding);
      if (request.timeout_ms >= 0) {
        entry.stream->deadline = read_at + std::chrono::milliseconds(request.timeout_ms);
      }
    }
  }
  CallHead& head = call->head;
  head.service_name = service;  // into request_.path, kept until the next Next()
  head.method_name = method;
  head.key = key;
  if (request.timeout_ms >= 0) {
    head.timeout_ms = static_cast<int32_t>(
        std::min<int64_t>(request.timeout_ms, std::numeric_limits<int32_t>::max()));
  }
  // ServerOptions::auth: the `authorization` metadata, per request (as HTTP's header).
  head.per_request_auth = true;
  // The built-in health Watch, like Check and the /health page, needs no credential.
  head.without_auth = builtin_health_ && request.path == kHealthWatchPath;
  for (const auto& [name, value] : request.metadata) {
    if (name != protocol::h2::kAuthorizationMetadata) continue;
    if (head.credential.data() != nullptr) head.credential_repeated = true;
    head.credential = value;
  }
  const int request_compress_type = request.compressed ? compress_type : 0;
  call->capture = CaptureGrpc(state_.capture.get(), request, request_compress_type);
  CallFields& fields = call->fields;
  fields.request_compress_type = request_compress_type;
  internal::TraceHeaderReader trace;
  for (const auto& [name, value] : request.metadata) trace.Offer(name, value);
  fields.trace = trace.Take();
  // The vector moves, its strings stay where they are: the credential's view stays good.
  fields.user_fields = std::move(request.metadata);
  const size_t request_size = request.message.size();
  // Member by member, as baidu_std's Next(): no temporary RequestPayload to move and destroy.
  call->payload.encoding = protocol::PayloadEncoding::Compressed(request_compress_type);
  call->payload.bytes = std::move(request.message);
  call->payload.request_size = request_size;
  call->payload.body = RequestBody::kRpcPayload;
  call->payload.json = request.json;
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
  const ServingStatus status = state_.health->Get(service);
  if (status == ServingStatus::kServiceUnknown) {
    Fail(connection, request.stream_id, GrpcStatus::kNotFound, "unknown service " + service);
    return;
  }
  // HealthCheckResponse{status: SERVING (1) | NOT_SERVING (2)}
  net::BufferChain response;
  const char encoded[2] = {0x08, static_cast<char>(status)};
  response.Append(std::string_view(encoded, sizeof(encoded)));
  {
    std::lock_guard lock(mutex_);
    session_.Respond(request.stream_id, std::move(response), false, {});
    PublishLocked();
  }
  Flush(connection);
}

void GrpcServerProtocol::AnswerPreflight(net::Connection& connection,
                                         const protocol::h2::GrpcRequest& request) {
  const ServerOptions& options = state_.config.options;
  const std::string* allowed =
      request.origin.empty() ? nullptr : CorsMatch(options, request.origin);
  {
    std::lock_guard lock(mutex_);
    if (allowed == nullptr) {
      session_.RespondPlain(request.stream_id, 403, {{"content-type", "text/plain"}},
                            "origin " + request.origin +
                                " is not in the server's cors_allowed_origins\n");
    } else {
      HeaderList headers;
      AddCorsPreflightHeaders(options, *allowed, &headers);
      LowerCaseNames(&headers, 0);
      session_.RespondPlain(request.stream_id, 204, std::move(headers), {});
    }
    PublishLocked();
  }
  Flush(connection);
}

void GrpcServerProtocol::Reply(net::Connection& connection, ServerCall& call,
                   const google::protobuf::Message& response) {
  net::BufferChain reply;
  const bool ok = PackReply(call, response, &reply);
  call.OnReplyPacked(ok, reply);
  SendReply(connection, call.correlation_id(), std::move(reply));
}

bool GrpcServerProtocol::PackReply(ServerCall& call, const google::protobuf::Message& response,
                                   net::BufferChain* out) {
  Controller& controller = call.controller();
  bool accepts_gzip = false, json = false;
  {
    std::lock_guard lock(mutex_);
    auto it = calls_.find(call.correlation_id());
    if (it != calls_.end()) {
      accepts_gzip = it->second.accepts_gzip;
      json = it->second.json;
    }
    if (it != calls_.end() && it->second.stream) {  // its messages went out as they were written
      Call& stream_call = it->second;
      stream_call.metadata.assign(controller.response_user_fields().begin(),
                                  controller.response_user_fields().end());
      stream_call.failed = controller.Failed();
      if (!stream_call.failed && Clock::now() >= stream_call.stream->deadline) {
        stream_call.failed = true;  // the handler gave up at the deadline: say so, not OK
        stream_call.status = GrpcStatus::kDeadlineExceeded;
        stream_call.text = "the stream's deadline (grpc-timeout) passed";
      } else if (stream_call.failed) {
        stream_call.status = protocol::h2::GrpcStatusForError(controller.ErrorCode());
        stream_call.text = controller.ErrorText();
        stream_call.details = controller.grpc_status_details();
      }
      return !stream_call.failed;
    }
  }
  int code = controller.ErrorCode();
  std::string text = controller.ErrorText();
  bool compressed = false;
  if (!controller.Failed()) {
    compressed = accepts_gzip && controller.response_compress_type() == COMPRESS_TYPE_GZIP;
    std::string error, printed;
    // Connect's JSON codec: the reply's JSON. reuse's (and a user strategy's) pooled objects may
    // hold more than their bytes say (docs/memory.md): those print from the wire.
    const bool packed =
        json ? protocol::MessageToJson(response, &printed, &error,
                                       /*via_wire=*/!call.messages().response_plain())
             : protocol::SerializePayload(response, compressed ? 2 : 0, out, &error, "response");
    if (json && packed) out->Append(printed);
    if (packed) {
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
    it->second.details = controller.grpc_status_details();
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
    if (call.stream) {
      session_.FinishStream(stream_id, call.failed ? call.status : GrpcStatus::kOk,
                            call.failed ? call.text : std::string(), call.metadata,
                            call.stream->trailers, call.failed ? call.details : std::string());
    } else if (call.failed) {
      session_.Fail(stream_id, call.status, call.text, call.details);
    } else if (const size_t held = HeldWithConnectionLocked(connection);
               held > 0 && held + reply.held_bytes() > max_held_bytes_) {
      // The client's windows or its socket do not take the replies already held: refuse rather
      // than hold more.
      session_.Fail(stream_id, GrpcStatus::kResourceExhausted,
                    "replies waiting for the client's flow-control window or socket reached the "
                    "server's max_unwritten_bytes=" + std::to_string(max_held_bytes_));
    } else {
      session_.Respond(stream_id, std::move(reply), call.compressed, call.metadata);
    }
    EraseLocked(it);
    PublishLocked();
  }
  Flush(connection);
}

void GrpcServerProtocol::Fail(net::Connection& connection, int64_t key, GrpcStatus status,
                              std::string_view text) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = calls_.find(key); it != calls_.end()) EraseLocked(it);
    session_.Fail(static_cast<int32_t>(key), status, text);
    PublishLocked();
  }
  Flush(connection);
}

void GrpcServerProtocol::SendError(net::Connection& connection, int64_t key,
                                   const CallError& error) {
  if (error.cause != ErrorCause::kError) {  // a quota of the client's own (see ErrorCause)
    Fail(connection, key, GrpcStatus::kResourceExhausted, error.text);
    return;
  }
  std::string grpc_text;
  const GrpcStatus status = protocol::h2::GrpcStatusForError(error.code, error.text, &grpc_text);
  Fail(connection, key, status, grpc_text);
}

void GrpcServerProtocol::MarkCanceledLocked(Call& call) {
  if (call.canceled) return;
  call.canceled = true;
  canceled_calls_.fetch_add(1, std::memory_order_release);
}

void GrpcServerProtocol::EraseLocked(std::unordered_map<int64_t, Call>::iterator it) {
  if (it->second.canceled) canceled_calls_.fetch_sub(1, std::memory_order_relaxed);
  if (it->second.stream) stream_calls_.fetch_sub(1, std::memory_order_relaxed);
  calls_.erase(it);
}

bool GrpcServerProtocol::CallCanceled(int64_t key) {
  // Every call asks as it starts: without a canceled call pending, no lock is taken.
  if (canceled_calls_.load(std::memory_order_acquire) == 0) return false;
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

size_t GrpcServerProtocol::HeldWithConnectionLocked(const net::Connection& connection) const {
  return session_.held_bytes() + unsent_.held_bytes() + connection.unwritten_held_bytes();
}

void GrpcServerProtocol::OnOutputDrained(net::Connection& connection) { Flush(connection); }

void GrpcServerProtocol::Flush(net::Connection& connection) {
  std::unique_lock lock(mutex_);
  TakeOutputLocked(connection);
  if (writing_) return;  // that thread writes these bytes too, in order
  writing_ = true;
  while (!unsent_.empty()) {
    net::BufferChain out = std::move(unsent_);
    unsent_.clear();
    lock.unlock();
    connection.Write(std::move(out));  // may close the connection and reply on this thread
    lock.lock();
    TakeOutputLocked(connection);
  }
  writing_ = false;
  const bool close = session_.Finished();
  const bool issue = close && !close_issued_;
  close_issued_ = close_issued_ || close;
  PublishLocked();
  lock.unlock();
  if (issue) connection.CloseWhenFlushed();
}

void GrpcServerProtocol::TakeOutputLocked(net::Connection& connection) {
  // Frames leave the session only while the connection has room for them: what the client's
  // windows allow but its socket does not take waits in the session, counted there.
  const size_t queued = unsent_.held_bytes() + connection.unwritten_held_bytes();
  const bool output_waits =
      queued >= max_held_bytes_ || session_.TakeOutput(&unsent_, max_held_bytes_ - queued);
  if (output_waits) connection.NotifyWhenDrained();
  // Replies held for the client's flow-control windows, none of whose bytes go out, close the
  // connection after write_timeout_ms (as bytes the socket does not take do).
  const uint64_t sent = session_.data_bytes_sent();
  const bool progressed = sent != data_bytes_seen_;
  data_bytes_seen_ = sent;
  const bool stalled = session_.held_bytes() > 0 && !output_waits;
  if (progressed || !stalled) connection.SetOutputStalled(false);
  if (stalled) connection.SetOutputStalled(true);
  if (!has_stream_methods_) return;
  if (writers_wait_for_connection_ && HeldWithConnectionLocked(connection) < max_held_bytes_) {
    session_.TakeDrained();  // every stream is woken here
    writers_wait_for_connection_ = false;  // every writer may have waited for the connection
    for (auto& [key, call] : calls_) {
      if (!call.stream) continue;
      PublishBufferedLocked(static_cast<int32_t>(key), *call.stream);
      call.stream->changed.notify_all();
    }
    return;
  }
  // Most turns drained no stream: then there is nothing to take or wake.
  if (session_.HasDrained()) WakeLocked(session_.TakeDrained());
}

void GrpcServerProtocol::WakeLocked(const std::vector<int32_t>& stream_ids) {
  for (int32_t stream_id : stream_ids) {
    auto it = calls_.find(stream_id);
    if (it == calls_.end() || !it->second.stream) continue;
    PublishBufferedLocked(stream_id, *it->second.stream);
    it->second.stream->changed.notify_all();
  }
}

void GrpcServerProtocol::PublishBufferedLocked(int32_t stream_id, const StreamWaits& waits) {
  if (!waits.counters) return;
  waits.counters->SetBufferedIn(session_.StreamUnreadBytes(stream_id));
  waits.counters->SetBufferedOut(session_.StreamHeldBytes(stream_id));
}

stream::StreamRegistry::Entry GrpcServerProtocol::RegisterStream(int64_t key,
                                                                 std::string_view method) {
  std::lock_guard lock(mutex_);
  auto it = calls_.find(key);
  if (it == calls_.end() || !it->second.stream) return {};
  StreamWaits& waits = *it->second.stream;
  stream::StreamRegistry::Entry entry =
      state_.streams->Open(stats::StreamKind::kGrpc, static_cast<uint64_t>(key), method,
                           waits.connection->id());
  waits.counters = entry.shared_counters();
  PublishBufferedLocked(static_cast<int32_t>(key), waits);
  return entry;
}

void GrpcServerProtocol::OnClosed() {
  std::lock_guard lock(mutex_);
  for (auto& [key, call] : calls_) {
    MarkCanceledLocked(call);
    if (call.stream) call.stream->changed.notify_all();
  }
}

bool GrpcServerProtocol::IsStreamCall(int64_t key) {
  // Every call asks as it starts: without a streaming call on the connection, no lock is taken
  // (a streaming call's entry is counted before its call can ask).
  if (!has_stream_methods_ || stream_calls_.load(std::memory_order_acquire) == 0) return false;
  std::lock_guard lock(mutex_);
  auto it = calls_.find(key);
  return it != calls_.end() && it->second.stream != nullptr;
}

bool GrpcServerProtocol::StreamAcceptsGzip(int64_t key) {
  std::lock_guard lock(mutex_);
  auto it = calls_.find(key);
  return it != calls_.end() && it->second.accepts_gzip;
}

void GrpcServerProtocol::WakeStream(int64_t key) {
  std::lock_guard lock(mutex_);
  WakeLocked({static_cast<int32_t>(key)});
}

void GrpcServerProtocol::AddStreamTrailer(int64_t key, std::string name, std::string value) {
  std::lock_guard lock(mutex_);
  auto it = calls_.find(key);
  if (it != calls_.end() && it->second.stream) {
    it->second.stream->trailers.emplace_back(std::move(name), std::move(value));
  }
}

int GrpcServerProtocol::StreamRead(int64_t key, net::BufferChain* message, int* compress_type) {
  std::unique_lock lock(mutex_);
  auto it = calls_.find(key);
  if (it == calls_.end() || !it->second.stream) return ECANCELED;
  const std::shared_ptr<StreamWaits> waits = it->second.stream;
  net::Connection& connection = *waits->connection;
  // stream_idle_timeout: the client sent nothing for that long while the handler waited.
  const std::chrono::milliseconds idle = state_.config.options.stream_idle_timeout;
  const Clock::time_point idle_until =
      idle.count() > 0 ? Clock::now() + idle : Clock::time_point::max();
  for (;;) {
    it = calls_.find(key);
    if (it == calls_.end() || it->second.canceled || connection.closed()) return ECANCELED;
    bool compressed = false;
    switch (session_.PopMessage(static_cast<int32_t>(key), message, &compressed)) {
      case protocol::h2::GrpcServerSession::StreamInput::kMessage: {
        *compress_type = compressed ? waits->compress_type : 0;
        if (waits->json && waits->binding) {  // Connect's JSON codec: to the wire form
          std::string json;
          if (compressed && waits->compress_type > 0) {
            net::BufferChain inflated;
            std::string detail;
            if (!protocol::Decompress(waits->compress_type, *message, &inflated, &detail,
                                      max_body_size_)) {
              return EREQUEST;
            }
            json = inflated.ToString();
          } else {
            json = message->ToString();
          }
          message->clear();
          message->Append(StreamJsonToWire(*waits->binding, std::move(json)));
          *compress_type = 0;
          compressed = false;
        }
        if (waits->counters) {
          waits->counters->SetBufferedIn(session_.StreamUnreadBytes(static_cast<int32_t>(key)));
        }
        std::vector<std::shared_ptr<CancelState>> fire;
        MarkCanceled(&fire);  // a message decoded after this one may have broken the stream
        PublishLocked();
        lock.unlock();
        for (const auto& cancel : fire) cancel->Fire();
        Flush(connection);  // a window that reopened
        return compressed && waits->compress_type == 0 ? EREQUEST : 0;
      }
      case protocol::h2::GrpcServerSession::StreamInput::kEnd:
        return ENODATA;
      case protocol::h2::GrpcServerSession::StreamInput::kNone:
        break;
    }
    const Clock::time_point now = Clock::now();
    if (now >= waits->deadline) return ECANCELED;
    if (now >= idle_until) return ETIMEDOUT;
    waits->changed.wait_until(lock, std::min(waits->deadline, idle_until));
  }
}

int GrpcServerProtocol::StreamWaitRoom(int64_t key, size_t max_stream_bytes, bool wait,
                                       Clock::time_point until) {
  std::unique_lock lock(mutex_);
  auto it = calls_.find(key);
  if (it == calls_.end() || !it->second.stream) return ECANCELED;
  const std::shared_ptr<StreamWaits> waits = it->second.stream;
  net::Connection& connection = *waits->connection;
  const auto stream_id = static_cast<int32_t>(key);
  until = std::min(until, waits->deadline);
  bool flushed = false;
  for (;;) {
    it = calls_.find(key);
    if (it == calls_.end() || it->second.canceled || connection.closed()) return ECANCELED;
    if (Clock::now() >= waits->deadline) return ECANCELED;
    const size_t held = session_.StreamHeldBytes(stream_id);
    const bool connection_room = HeldWithConnectionLocked(connection) < max_held_bytes_;
    if ((held == 0 || held < max_stream_bytes) && connection_room) return 0;
    if (!flushed) {  // what is queued goes out (as the windows allow) before we wait for it
      flushed = true;
      lock.unlock();
      Flush(connection);
      lock.lock();
      continue;
    }
    if (!wait) return EAGAIN;
    if (Clock::now() >= until) return ETIMEDOUT;
    if (!connection_room) {
      writers_wait_for_connection_ = true;
      connection.NotifyWhenDrained();  // the socket's bytes count too: wake us as they go
    }
    waits->changed.wait_until(lock, until);
  }
}

int GrpcServerProtocol::StreamSend(int64_t key, net::BufferChain&& message, bool compressed,
                                   const std::map<std::string, std::string>* metadata) {
  std::unique_lock lock(mutex_);
  auto it = calls_.find(key);
  if (it == calls_.end() || !it->second.stream || it->second.canceled) return ECANCELED;
  net::Connection& connection = *it->second.stream->connection;
  if (it->second.stream->json && it->second.stream->binding) {  // Connect's JSON codec
    std::string json;
    if (!StreamWireToJson(*it->second.stream->binding, message.ToString(), &json)) return ERESPONSE;
    message.clear();
    message.Append(json);
    compressed = false;
  }
  std::vector<std::pair<std::string, std::string>> headers;
  if (metadata != nullptr) headers.assign(metadata->begin(), metadata->end());
  const auto stream_id = static_cast<int32_t>(key);
  if (!session_.SendMessage(stream_id, std::move(message), compressed, headers)) return ECANCELED;
  PublishLocked();
  const size_t held = session_.StreamHeldBytes(stream_id);
  if (const auto& counters = it->second.stream->counters) counters->SetBufferedOut(held);
  if (held < kStreamFlushBytes) {
    // Small messages written in a row leave in one write: the connection's thread flushes them
    // once this fiber lets it (or the batch grows to kStreamFlushBytes).
    if (!flush_posted_) {
      flush_posted_ = true;
      asio::post(connection.executor(), [this, owner = connection.shared_from_this()] {
        {
          std::lock_guard flush_lock(mutex_);
          flush_posted_ = false;
        }
        Flush(*owner);
      });
    }
    return 0;
  }
  lock.unlock();
  Flush(connection);
  return 0;
}

}  // namespace arenarpc::server
