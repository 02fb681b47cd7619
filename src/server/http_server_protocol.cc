#include "server/http_server_protocol.h"

#include <charconv>

#include "arenarpc/error_codes.h"
#include "builtin/builtin_service.h"
#include "client/controller_access.h"
#include "protocol/http/json_message.h"
#include "protocol/meta_builder.h"
#include "protocol/payload_codec.h"
#include "server/call_task.h"
#include "server/server_call.h"
#include "server/server_connection.h"

namespace arenarpc::server {

namespace {

constexpr std::string_view kJsonType = "application/json";
constexpr std::string_view kProtoType = "application/proto";

bool StartsWithNoCase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    const char c = text[i];
    if ((c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c) != prefix[i]) return false;
  }
  return true;
}

// Binary protobuf bodies: "application/proto" and "application/x-protobuf" (brpc's names).
bool IsProtoBody(const protocol::HttpRequest& request) {
  const std::string* type = request.Header("content-type");
  return type != nullptr &&
         (StartsWithNoCase(*type, kProtoType) || StartsWithNoCase(*type, "application/x-protobuf"));
}

// "/Service/Method" -> its two segments; false for any other shape.
bool SplitMethodPath(std::string_view path, std::string_view* service, std::string_view* method) {
  if (path.size() < 4 || path[0] != '/') return false;
  const size_t slash = path.find('/', 1);
  if (slash == std::string_view::npos || slash == 1 || slash + 1 == path.size()) return false;
  if (path.find('/', slash + 1) != std::string_view::npos) return false;
  *service = path.substr(1, slash - 1);
  *method = path.substr(slash + 1);
  return true;
}

protocol::HttpResponseHead Head(int status) {
  protocol::HttpResponseHead head;
  head.status = status;
  return head;
}

std::string WithNewline(std::string_view text) {
  std::string body(text);
  body += '\n';
  return body;
}

}  // namespace

HttpServerProtocol::HttpServerProtocol(ServerState& state, bool internal_port)
    : state_(state),
      internal_port_(internal_port),
      max_held_(static_cast<size_t>(state.options.max_queued_requests_per_connection)),
      decoder_(state.options.max_http_header_size, state.options.max_body_size) {}

std::unique_ptr<ServerProtocol> HttpServerProtocol::Create(ServerState& state, bool internal_port) {
  return std::make_unique<HttpServerProtocol>(state, internal_port);
}

ServerProtocol::Step HttpServerProtocol::Next(ServerConnection& server, net::Connection& connection,
                                              net::BufferChain& input,
                                              std::chrono::steady_clock::time_point read_at,
                                              std::unique_ptr<PendingCall>* call) {
  owner_ = &server;
  if (stopped_) {  // after "Connection: close" or bad input nothing more is read
    input.clear();
    return Step::kNeedMore;
  }
  protocol::HttpRequest request;
  switch (decoder_.Next(input, &request)) {
    case protocol::HttpRequestDecoder::Status::kNeedMore:
      return Step::kNeedMore;
    case protocol::HttpRequestDecoder::Status::kExpectContinue: {
      net::BufferChain line;
      line.Append(protocol::HttpContinueLine());
      Deliver(connection, next_sequence_, std::move(line), /*final=*/false);
      return Step::kAnswered;
    }
    case protocol::HttpRequestDecoder::Status::kError: {
      const int64_t sequence = next_sequence_++;
      stopped_ = true;
      input.clear();
      Register(sequence, /*keep_alive=*/false, 1, /*json=*/false);
      Respond(connection, sequence, Head(decoder_.error_status()), WithNewline(decoder_.error()));
      return Step::kMalformedAnswered;
    }
    case protocol::HttpRequestDecoder::Status::kRequest:
      break;
  }
  const int64_t sequence = next_sequence_++;
  if (!request.keep_alive) stopped_ = true;
  Register(sequence, request.keep_alive, request.version_minor, !IsProtoBody(request));
  return Route(server, connection, request, sequence, read_at, call);
}

ServerProtocol::Step HttpServerProtocol::Route(ServerConnection& server,
                                               net::Connection& connection,
                                               protocol::HttpRequest& request, int64_t sequence,
                                               std::chrono::steady_clock::time_point read_at,
                                               std::unique_ptr<PendingCall>* call) {
  std::string_view service, method;
  if (SplitMethodPath(request.path, &service, &method)) {
    int code = 0;
    std::string text;
    const bool known = state_.registry.Resolve(service, method, &code, &text) != nullptr;
    if (known || (request.method == "POST" && state_.builtins.Find(request.path) == nullptr)) {
      if (internal_port_) {
        Respond(connection, sequence, Head(404),
                "methods are called on the main port, not on internal_port\n");
        return Step::kAnswered;
      }
      if (request.method != "POST") {
        protocol::HttpResponseHead head = Head(405);
        head.headers.emplace_back("Allow", "POST");
        Respond(connection, sequence, std::move(head), "call " + request.path + " with POST\n");
        return Step::kAnswered;
      }
      return CallMethod(server, connection, request, sequence, service, method, read_at, call);
    }
  }
  return ServeBuiltin(connection, request, sequence);
}

ServerProtocol::Step HttpServerProtocol::ServeBuiltin(net::Connection& connection,
                                                      const protocol::HttpRequest& request,
                                                      int64_t sequence) {
  const ServerOptions& options = state_.options;
  const builtin::BuiltinHandler* handler =
      options.has_builtin_services ? state_.builtins.Find(request.path) : nullptr;
  if (handler == nullptr) {
    Respond(connection, sequence, Head(404), "no method or page at " + request.path + "\n");
    return Step::kAnswered;
  }
  if (options.internal_port >= 0 && !internal_port_) {
    Respond(connection, sequence, Head(403),
            "built-in services are served on internal_port=" +
                std::to_string(options.internal_port) + "\n");
    return Step::kAnswered;
  }
  builtin::BuiltinRequest page_request;
  page_request.method = request.method;
  page_request.path = request.path;
  for (auto& [key, value] : protocol::ParseQuery(request.query)) {
    page_request.query.emplace(std::move(key), std::move(value));
  }
  page_request.headers = request.headers;
  page_request.body = request.body;
  builtin::BuiltinReply reply;
  (*handler)(page_request, &reply);
  protocol::HttpResponseHead head = Head(reply.status);
  head.content_type = reply.content_type;
  head.headers = std::move(reply.headers);
  if (request.method == "HEAD") {
    const Exchange exchange = ExchangeOf(sequence);
    head.keep_alive = exchange.keep_alive;
    head.version_minor = exchange.version_minor;
    net::BufferChain bytes;
    protocol::EncodeHttpHead(head, reply.body.size(), &bytes);
    Deliver(connection, sequence, std::move(bytes), /*final=*/true);
  } else {
    Respond(connection, sequence, std::move(head), reply.body);
  }
  return Step::kAnswered;
}

ServerProtocol::Step HttpServerProtocol::CallMethod(
    ServerConnection& server, net::Connection& connection, protocol::HttpRequest& request,
    int64_t sequence, std::string_view service, std::string_view method,
    std::chrono::steady_clock::time_point read_at, std::unique_ptr<PendingCall>* pending) {
  ServerConnection::CallHead head;
  head.service_name = service;
  head.method_name = method;
  head.key = sequence;
  int32_t timeout_ms = -1;
  std::string invalid_text;
  if (const std::string* value = request.Header("x-bd-timeout-ms")) {
    const auto [end, error] =
        std::from_chars(value->data(), value->data() + value->size(), timeout_ms);
    if (error != std::errc() || end != value->data() + value->size() || timeout_ms < 0) {
      invalid_text = "x-bd-timeout-ms: '" + *value + "' is not a number of milliseconds >= 0";
      head.invalid_code = EREQUEST;
      head.invalid_text = invalid_text;
    }
  }
  std::unique_ptr<ServerCall> call = server.Admit(connection, head, read_at);
  if (!call) return Step::kAnswered;
  Controller& controller = call->controller();
  if (timeout_ms > 0) internal::ControllerAccess::set_deadline_hint_ms(controller, timeout_ms);
  if (const std::string* log_id = request.Header("x-bd-log-id")) {
    uint64_t id = 0;
    std::from_chars(log_id->data(), log_id->data() + log_id->size(), id);
    controller.set_log_id(id);
  }
  RequestPayload payload;
  payload.request_size = request.body.size();
  payload.bytes.Append(request.body);
  *pending = server.Pending(std::move(call), std::move(payload));
  return Step::kCall;
}

bool HttpServerProtocol::Saturated() const noexcept {
  return held_.load(std::memory_order_acquire) >= max_held_;
}

bool HttpServerProtocol::OpenRequest(ServerCall& call, const RequestPayload& payload,
                                     protocol::PayloadBytes* bytes, std::string* error_text) {
  if (!ExchangeOf(call.correlation_id()).json || payload.bytes.empty()) {
    bytes->Refer(payload.bytes);  // binary, or no body: the empty message
    return true;
  }
  std::string wire;
  const google::protobuf::Message& prototype = call.method().binding->memory->request_prototype();
  std::string flat;  // only when the body spans more than one block
  const std::string_view json =
      payload.bytes.span_count() == 1
          ? std::string_view(payload.bytes.span(0).data(), payload.bytes.span(0).size())
          : std::string_view(flat = payload.bytes.ToString());
  if (auto verdict = call.method().request_memory->AdmitJson(json);
      verdict.verdict != memory::RequestMemoryGate::Verdict::kAdmitted) {
    call.MarkRequestTooLarge();
    *error_text = std::move(verdict.text);
    return false;
  }
  if (!protocol::JsonToWire(prototype, json, &wire, error_text)) return false;
  net::BufferChain converted;
  converted.Append(wire);
  bytes->Own(std::move(converted));
  return true;
}

bool HttpServerProtocol::PackReply(ServerCall& call, const google::protobuf::Message& response,
                                   net::BufferChain* out) {
  const Exchange exchange = ExchangeOf(call.correlation_id());
  Controller& controller = call.controller();
  int code = controller.ErrorCode();
  std::string error_text = controller.ErrorText();
  if (!controller.Failed()) {
    std::string body;
    bool packed = false;
    if (exchange.json) {
      // heap/arena/paged responses are plain messages; reuse's (and a user strategy's) pooled
      // objects may hold more than their bytes say (docs/memory.md): print those from the wire.
      const std::string& mode = call.method().memory_mode;
      const bool via_wire = mode != "heap" && mode != "arena" && mode != "paged";
      packed = protocol::MessageToJson(response, &body, &error_text, via_wire);
    } else if (!(packed = response.IsInitialized() && response.SerializeToString(&body))) {
      error_text = "cannot serialize " + response.GetTypeName() + ": " +
                   response.InitializationErrorString();
    }
    if (packed) {
      protocol::HttpResponseHead head = HeadFor(200, exchange);
      head.content_type = exchange.json ? kJsonType : kProtoType;
      protocol::EncodeHttpResponse(head, body, out);
      return true;
    }
    code = ERESPONSE;
  }
  protocol::EncodeHttpResponse(ErrorHead(code, error_text, exchange), WithNewline(error_text), out);
  return false;
}

void HttpServerProtocol::SendReply(net::Connection& connection, int64_t key,
                                   net::BufferChain&& reply) {
  Deliver(connection, key, std::move(reply), /*final=*/true);
}

void HttpServerProtocol::SendError(net::Connection& connection, int64_t key, int code,
                                   std::string_view text) {
  Respond(connection, key, ErrorHead(code, text, ExchangeOf(key)), WithNewline(text));
}

void HttpServerProtocol::SendRequestTooLarge(net::Connection& connection, int64_t key,
                                             std::string_view text) {
  protocol::HttpResponseHead head = ErrorHead(EREQUEST, text, ExchangeOf(key));
  head.status = 413;
  Respond(connection, key, std::move(head), WithNewline(text));
}

protocol::HttpResponseHead HttpServerProtocol::HeadFor(int status, const Exchange& exchange) {
  protocol::HttpResponseHead head;
  head.status = status;
  head.keep_alive = exchange.keep_alive;
  head.version_minor = exchange.version_minor;
  return head;
}

// brpc's error reply: the status for the code, the code and text in x-bd-error-* headers.
protocol::HttpResponseHead HttpServerProtocol::ErrorHead(int code, std::string_view text,
                                                         const Exchange& exchange) {
  const int wire_code = protocol::WireErrorCode(code);
  protocol::HttpResponseHead head = HeadFor(protocol::HttpStatusForError(wire_code), exchange);
  head.headers.emplace_back("x-bd-error-code", std::to_string(wire_code));
  head.headers.emplace_back("x-bd-error-message", protocol::HttpHeaderValue(text));
  return head;
}

HttpServerProtocol::Exchange HttpServerProtocol::ExchangeOf(int64_t sequence) {
  std::lock_guard lock(mutex_);
  Exchange copy;
  if (auto it = exchanges_.find(sequence); it != exchanges_.end()) {
    copy.keep_alive = it->second.keep_alive;
    copy.version_minor = it->second.version_minor;
    copy.json = it->second.json;
  }
  return copy;
}

void HttpServerProtocol::Register(int64_t sequence, bool keep_alive, int version_minor, bool json) {
  std::lock_guard lock(mutex_);
  Exchange& exchange = exchanges_[sequence];  // "100 Continue" may have created it
  held_.store(exchanges_.size(), std::memory_order_release);
  exchange.keep_alive = keep_alive;
  exchange.version_minor = version_minor;
  exchange.json = json;
}

void HttpServerProtocol::Respond(net::Connection& connection, int64_t sequence,
                                 protocol::HttpResponseHead head, std::string_view body) {
  const Exchange exchange = ExchangeOf(sequence);
  head.keep_alive = exchange.keep_alive;
  head.version_minor = exchange.version_minor;
  net::BufferChain bytes;
  protocol::EncodeHttpResponse(head, body, &bytes);
  Deliver(connection, sequence, std::move(bytes), /*final=*/true);
}

void HttpServerProtocol::Deliver(net::Connection& connection, int64_t sequence,
                                 net::BufferChain&& bytes, bool final) {
  bool close = false;
  bool drained = false;
  {
    std::lock_guard lock(mutex_);
    Exchange& exchange = exchanges_[sequence];
    exchange.unsent.Append(std::move(bytes));
    exchange.done = exchange.done || final;
    // Writes under the lock keep the replies in sequence order on the connection.
    while (!close && !exchanges_.empty() && exchanges_.begin()->first == next_to_write_) {
      Exchange& next = exchanges_.begin()->second;
      if (!next.unsent.empty()) connection.Write(std::move(next.unsent));
      next.unsent.clear();
      if (!next.done) break;
      close = !next.keep_alive;
      exchanges_.erase(exchanges_.begin());
      ++next_to_write_;
    }
    const size_t held = exchanges_.size();
    drained = held_.load(std::memory_order_relaxed) >= max_held_ && held < max_held_;
    held_.store(held, std::memory_order_release);
  }
  // Reading paused while this many replies were held: see whether it may resume (outside the
  // lock: the connection's backlog lock is taken there).
  if (drained && owner_ != nullptr) owner_->OnRepliesDrained(connection);
  if (close) connection.CloseWhenFlushed();  // may run OnClosed() here: outside the lock
}

}  // namespace arenarpc::server
