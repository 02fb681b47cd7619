#include "server/http_server_protocol.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "arenarpc/error_codes.h"
#include "builtin/builtin_service.h"
#include "call/trace_headers.h"
#include "protocol/compression.h"
#include "protocol/h2/grpc_wire.h"
#include "protocol/http/connect_wire.h"
#include "protocol/http/grpc_web_wire.h"
#include "protocol/http/json_message.h"
#include "server/connect_json.h"
#include "protocol/meta_builder.h"
#include "protocol/payload_codec.h"
#include "server/call_task.h"
#include "server/capture_seam.h"
#include "server/http_cors.h"
#include "server/method_entry.h"
#include "server/server_call.h"
#include "util/base64.h"

namespace arenarpc::server {

namespace {

bool StartsWithNoCase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    const char c = text[i];
    if ((c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c) != prefix[i]) return false;
  }
  return true;
}

// What a request's Content-Type says its body is: brpc's JSON (also without one) or protobuf
// ("application/proto", "application/x-protobuf"), grpc-web's, Connect streaming's. One compare
// of "application/" and a switch on the next byte: brpc's calls pay no more than before.
enum class BodyKind {
  kJson, kProto, kGrpcWeb, kGrpcWebText, kGrpcWebOther, kConnectProto, kConnectJson, kConnectOther
};

BodyKind ClassifyBody(const std::string* type) {
  constexpr std::string_view kApplication = "application/";
  if (type == nullptr) return BodyKind::kJson;
  // Clients send it lower-case: one memcmp, the case-blind loop only otherwise.
  if (std::string_view(*type).substr(0, kApplication.size()) != kApplication &&
      !StartsWithNoCase(*type, kApplication)) {
    return BodyKind::kJson;
  }
  std::string_view rest = std::string_view(*type).substr(kApplication.size());
  const char first = rest.empty() ? '\0' : static_cast<char>(rest[0] | 0x20);
  switch (first) {
    case 'p':
      return StartsWithNoCase(rest, "proto") ? BodyKind::kProto : BodyKind::kJson;
    case 'x':
      return StartsWithNoCase(rest, "x-protobuf") ? BodyKind::kProto : BodyKind::kJson;
    case 'g': {
      constexpr std::string_view kGrpcWeb = "grpc-web";
      if (!StartsWithNoCase(rest, kGrpcWeb)) return BodyKind::kJson;
      // "", "+proto", "-text", "-text+proto" (parameters after ';' aside)
      rest.remove_prefix(kGrpcWeb.size());
      rest = rest.substr(0, rest.find(';'));
      while (!rest.empty() && rest.back() == ' ') rest.remove_suffix(1);
      const bool text = StartsWithNoCase(rest, "-text");
      if (text) rest.remove_prefix(5);
      if (!rest.empty() && !(rest.size() == 6 && StartsWithNoCase(rest, "+proto"))) {
        return BodyKind::kGrpcWebOther;
      }
      return text ? BodyKind::kGrpcWebText : BodyKind::kGrpcWeb;
    }
    case 'c': {
      constexpr std::string_view kConnect = "connect+";
      if (!StartsWithNoCase(rest, kConnect)) return BodyKind::kJson;
      rest.remove_prefix(kConnect.size());
      if (StartsWithNoCase(rest, "proto")) return BodyKind::kConnectProto;
      if (StartsWithNoCase(rest, "json")) return BodyKind::kConnectJson;
      return BodyKind::kConnectOther;
    }
    default:
      return BodyKind::kJson;
  }
}

// Content-Encoding of a request body as a baidu_std compress type (protocol/compression.h):
// none/identity 0, gzip 2, deflate 3 (zlib, RFC 1950, as HTTP names it); anything else -1.
int RequestCompressType(const protocol::HttpRequest& request) {
  const std::string* encoding = request.Header("content-encoding");
  if (encoding == nullptr || encoding->empty()) return 0;
  if (StartsWithNoCase(*encoding, "identity") && encoding->size() == 8) return 0;
  if ((StartsWithNoCase(*encoding, "gzip") && encoding->size() == 4) ||
      (StartsWithNoCase(*encoding, "x-gzip") && encoding->size() == 6)) {
    return 2;
  }
  if (StartsWithNoCase(*encoding, "deflate") && encoding->size() == 7) return 3;
  return -1;
}

// Accept-Encoding lists gzip (a q=0 refusal aside).
bool AcceptsGzip(const protocol::HttpRequest& request) {
  const std::string* accept = request.Header("accept-encoding");
  if (accept == nullptr) return false;
  std::string lower(*accept);
  for (char& c : lower) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  const size_t at = lower.find("gzip");
  if (at == std::string::npos) return false;
  const size_t end = lower.find(',', at);
  const std::string_view rest = std::string_view(lower).substr(at, end - at);
  return rest.find("q=0") == std::string_view::npos || rest.find("q=0.") != std::string_view::npos;
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

// A built-in page, admitted like a call: it runs on a thread from the connection's backlog.
class HttpPageTask final : public AdmittedTask {
 public:
  HttpPageTask(std::shared_ptr<ServerState> state, std::shared_ptr<net::Connection> connection,
               HttpServerProtocol* protocol, const builtin::BuiltinHandler* handler,
               protocol::HttpRequest&& request, std::string principal, int64_t sequence)
      : AdmittedTask(std::move(state)),
        connection_(std::move(connection)),
        protocol_(protocol),
        handler_(handler),
        request_(std::move(request)),
        principal_(std::move(principal)),
        sequence_(sequence) {}

 protected:
  void Run() override {
    builtin::BuiltinRequest page;
    page.method = std::move(request_.method);
    page.path = std::move(request_.path);
    for (auto& [key, value] : protocol::ParseQuery(request_.query)) {
      page.query.emplace(std::move(key), std::move(value));
    }
    page.headers = std::move(request_.headers);
    page.body = std::move(request_.body);
    page.peer = connection_->remote_side();
    page.principal = std::move(principal_);
    builtin::BuiltinReply reply;
    (*handler_)(page, &reply);
    protocol_->SendPage(*connection_, sequence_, std::move(reply), page.method == "HEAD");
  }

 private:
  std::shared_ptr<net::Connection> connection_;  // keeps protocol_ alive
  HttpServerProtocol* protocol_;
  const builtin::BuiltinHandler* handler_;  // in ServerState::builtins, kept alive by the base
  protocol::HttpRequest request_;
  std::string principal_;  // who ServerOptions::auth said sent it
  int64_t sequence_;
};

HttpServerProtocol::HttpServerProtocol(ServerState& state, ProtocolOwner& owner,
                                       bool internal_port)
    : state_(state),
      internal_port_(internal_port),
      decoder_(state.config.options.max_http_header_size, state.config.options.max_body_size),
      max_held_(static_cast<size_t>(state.config.options.max_queued_requests_per_connection)),
      max_held_bytes_(state.config.options.max_unwritten_bytes),
      max_body_size_(state.config.options.max_body_size),
      owner_(owner) {}

std::unique_ptr<ServerProtocol> HttpServerProtocol::Create(ServerState& state,
                                                           ProtocolOwner& owner,
                                                           bool internal_port) {
  return std::make_unique<HttpServerProtocol>(state, owner, internal_port);
}

ServerProtocol::Step HttpServerProtocol::Next(net::Connection& connection, net::BufferChain& input,
                                              std::chrono::steady_clock::time_point read_at,
                                              Decoded* decoded) {
  if (stopped_) {  // after "Connection: close" or bad input nothing more is read
    input.clear();
    return Step::kNeedMore;
  }
  // The last request stays until the decoder moves the next one in: its call's CallHead points
  // into it.
  protocol::HttpRequest& request = request_;
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
      Exchange settings;
      settings.keep_alive = false;
      settings.json = false;
      Register(sequence, settings);
      Respond(connection, sequence, Head(decoder_.error_status()), WithNewline(decoder_.error()));
      return Step::kMalformedAnswered;
    }
    case protocol::HttpRequestDecoder::Status::kRequest:
      break;
  }
  const int64_t sequence = next_sequence_++;
  if (!request.keep_alive) stopped_ = true;
  read_at_ = read_at;
  Exchange settings;
  settings.keep_alive = request.keep_alive;
  settings.version_minor = request.version_minor;
  settings.request_compress = RequestCompressType(request);
  settings.accepts_gzip = AcceptsGzip(request);
  // The body's protocol from its Content-Type: one compare for brpc's JSON and protobuf bodies,
  // then whether a Connect client sent it.
  const std::string* type = request.Header("content-type");
  const BodyKind kind = ClassifyBody(type);
  if (kind != BodyKind::kJson && kind != BodyKind::kProto) {  // a web call: its own state
    web_invalid_.clear();
    body_offset_ = 0;
  }
  switch (kind) {
    case BodyKind::kJson:
      settings.json = true;
      break;
    case BodyKind::kProto:
      settings.json = false;
      break;
    case BodyKind::kGrpcWeb:
    case BodyKind::kGrpcWebText:
      settings.web = kind == BodyKind::kGrpcWeb ? WebRpc::kGrpcWeb : WebRpc::kGrpcWebText;
      settings.json = false;
      OpenWebBody(&settings);
      break;
    case BodyKind::kConnectProto:
    case BodyKind::kConnectJson:
      settings.web = WebRpc::kConnectStream;
      settings.json = kind == BodyKind::kConnectJson;
      OpenWebBody(&settings);
      break;
    case BodyKind::kGrpcWebOther:
      settings.web = WebRpc::kGrpcWeb;
      settings.json = false;
      web_invalid_ = "Content-Type " + *type + " is not served: grpc-web with protobuf messages "
                     "(application/grpc-web, +proto, -text, -text+proto)";
      break;
    case BodyKind::kConnectOther:
      settings.web = WebRpc::kConnectStream;
      web_invalid_ = "Content-Type " + *type + " is not served: Connect streaming with "
                     "application/connect+proto or application/connect+json";
      break;
  }
  // A Connect unary call is a JSON or protobuf body with the header its clients always send.
  if (settings.web == WebRpc::kNone && request.connect_protocol) {
    settings.web = WebRpc::kConnect;
    web_invalid_.clear();
    body_offset_ = 0;
  }

  web_ = settings.web;
  const ServerOptions& options = state_.config.options;
  const std::string* origin =
      options.cors_allowed_origins.empty() ? nullptr : request.Header("origin");
  if (origin != nullptr) settings.cors_origin = CorsMatch(options, *origin);
  Register(sequence, settings);
  if (origin != nullptr && request.method == "OPTIONS" &&
      request.Header("access-control-request-method") != nullptr) {
    AnswerPreflight(connection, sequence);
    request_ = protocol::HttpRequest();
    return Step::kAnswered;
  }
  const Step step = Route(connection, sequence, &settings, decoded);
  if (step == Step::kCall) {
    DecodeCall(settings, &decoded->call);
  } else if (step == Step::kAnswered) {
    request_ = protocol::HttpRequest();  // nothing to keep
  }
  return step;
}

ServerProtocol::Step HttpServerProtocol::Route(net::Connection& connection, int64_t sequence,
                                               Exchange* settings, Decoded* decoded) {
  CallHead* head = &decoded->call.head;
  const protocol::HttpRequest& request = request_;
  std::string_view service, method;
  if (SplitMethodPath(request.path, &service, &method)) {
    int code = 0;
    std::string text;
    MethodEntry* entry =
        last_resolved_.Resolve(state_.config.registry, service, method, &code, &text);
    if (entry != nullptr ||
        (request.method == "POST" && state_.config.builtins.Find(request.path) == nullptr)) {
      if (internal_port_) {
        Respond(connection, sequence, Head(404),
                "methods are called on the main port, not on internal_port\n");
        return Step::kAnswered;
      }
      if (request.method == "GET" && entry != nullptr && !request.query.empty() &&
          protocol::IsConnectGetQuery(request.query)) {  // Connect's GET
        if (!HasNoSideEffects(*entry)) {
          protocol::HttpResponseHead head = Head(405);
          head.headers.emplace_back("Allow", "POST");
          Respond(connection, sequence, std::move(head), ConnectGetRefusal(entry->full_name));
          return Step::kAnswered;
        }
        OpenConnectGet(settings);
        Register(sequence, *settings);
        return CallMethod(connection, sequence, service, method, entry, head);
      }
      if (request.method != "POST") {
        protocol::HttpResponseHead head = Head(405);
        head.headers.emplace_back("Allow", "POST");
        Respond(connection, sequence, std::move(head), "call " + request.path + " with POST\n");
        return Step::kAnswered;
      }
      return CallMethod(connection, sequence, service, method, entry, head);
    }
  }
  return ServeBuiltin(connection, sequence, &decoded->task);
}

ServerProtocol::Step HttpServerProtocol::ServeBuiltin(net::Connection& connection, int64_t sequence,
                                                      DecodedTask* task) {
  const protocol::HttpRequest& request = request_;
  const ServerOptions& options = state_.config.options;
  const builtin::BuiltinHandler* handler =
      options.has_builtin_services ? state_.config.builtins.Find(request.path) : nullptr;
  if (handler == nullptr) {
    Respond(connection, sequence, Head(404), "no method or page at " + request.path + "\n");
    return Step::kAnswered;
  }
  if (!internal_port_ && options.main_port_pages != MainPortPages::kAll &&
      !(options.main_port_pages == MainPortPages::kHealth && request.path == "/health")) {
    Respond(connection, sequence, Head(404),
            "built-in page " + request.path + " is not served on this port (main_port_pages=" +
                (options.main_port_pages == MainPortPages::kHealth ? "kHealth" : "kNone") + ")\n");
    return Step::kAnswered;
  }
  // With an authenticator, pages other than /health need a valid Authorization header too.
  std::string principal;  // who ServerOptions::auth said sent it
  if (options.auth != nullptr && request.path != "/health") {
    const std::string* authorization = request.Header("authorization");
    AuthContext context;
    if (authorization == nullptr || request.HeaderCount("authorization") > 1 ||
        options.auth->VerifyCredential(*authorization, connection.remote_side(), &context) != 0) {
      state_.counters.rejected_auth.fetch_add(1, std::memory_order_relaxed);
      protocol::HttpResponseHead head = Head(403);
      head.headers.emplace_back("x-bd-error-code", std::to_string(ERPCAUTH));
      Respond(connection, sequence, std::move(head), std::string(protocol::kAuthFailedText) + "\n");
      return Step::kAnswered;
    }
    principal = context.user();
  }
  if (options.internal_port >= 0 && !internal_port_ &&
      options.main_port_pages == MainPortPages::kAll) {
    Respond(connection, sequence, Head(403),
            "built-in services are served on internal_port=" +
                std::to_string(options.internal_port) + "\n");
    return Step::kAnswered;
  }
  task->key = sequence;
  task->request_size = request_.body.size();
  task->task = std::make_unique<HttpPageTask>(state_.shared_from_this(),
                                              connection.shared_from_this(), this, handler,
                                              std::move(request_), std::move(principal), sequence);
  return Step::kTask;
}

void HttpServerProtocol::SendPage(net::Connection& connection, int64_t sequence,
                                  builtin::BuiltinReply&& reply, bool head_only) {
  protocol::HttpResponseHead head = Head(reply.status);
  head.content_type = std::move(reply.content_type);
  head.headers = std::move(reply.headers);
  if (!head_only) {
    Respond(connection, sequence, std::move(head), reply.body);
    return;
  }
  const Exchange exchange = ExchangeOf(sequence);
  head.keep_alive = exchange.keep_alive;
  head.version_minor = exchange.version_minor;
  net::BufferChain bytes;
  protocol::EncodeHttpHead(head, reply.body.size(), &bytes);
  Deliver(connection, sequence, std::move(bytes), /*final=*/true);
}

ServerProtocol::Step HttpServerProtocol::CallMethod(net::Connection& connection, int64_t sequence,
                                                    std::string_view service,
                                                    std::string_view method,
                                                    MethodEntry* entry, CallHead* head) {
  const protocol::HttpRequest& request = request_;
  head->service_name = service;
  head->method_name = method;
  head->method = entry;  // nullptr: admission answers ENOSERVICE/ENOMETHOD
  head->key = sequence;
  head->per_request_auth = true;
  if (const std::string* authorization = request.Header("authorization")) {
    head->credential = *authorization;
    head->credential_repeated = request.HeaderCount("authorization") > 1;
  }
  if (RequestCompressType(request) < 0) {
    invalid_text_ = "Content-Encoding: " + *request.Header("content-encoding") +
                    " is not supported (gzip, deflate or identity)";
    head->invalid_code = EREQUEST;
    head->invalid_text = invalid_text_;
  }
  if (web_ != WebRpc::kNone) {
    WebCallHead(connection, sequence, entry, head);
    return Step::kCall;
  }
  if (const std::string* value = request.Header("x-bd-timeout-ms")) {
    int32_t timeout_ms = -1;
    const auto [end, error] =
        std::from_chars(value->data(), value->data() + value->size(), timeout_ms);
    if (error != std::errc() || end != value->data() + value->size() || timeout_ms < 0) {
      invalid_text_ = "x-bd-timeout-ms: '" + *value + "' is not a number of milliseconds >= 0";
      head->invalid_code = EREQUEST;
      head->invalid_text = invalid_text_;
    } else if (timeout_ms > 0) {  // 0 sets none
      head->timeout_ms = timeout_ms;
    }
  }
  return Step::kCall;
}

void HttpServerProtocol::DecodeCall(const Exchange& settings, DecodedCall* call) {
  call->capture = CaptureHttp(state_.capture.get(), request_);
  CallFields& fields = call->fields;
  if (const std::string* log_id = request_.Header("x-bd-log-id")) {
    uint64_t id = 0;
    std::from_chars(log_id->data(), log_id->data() + log_id->size(), id);
    fields.log_id = static_cast<int64_t>(id);
  }
  internal::TraceHeaderReader trace;
  for (const auto& [name, value] : request_.headers) trace.Offer(name, value);
  fields.trace = trace.Take();
  RequestPayload& payload = call->payload;
  payload.body = RequestBody::kHttpBody;
  payload.encoding.compress_type = settings.request_compress;
  payload.json = settings.json;
  if (web_ != WebRpc::kNone) {
    DecodeWebCall(call);
  } else {
    payload.request_size = request_.body.size();
    payload.bytes.Append(request_.body);
  }
  // The head points into the request's path and headers, kept until the next request; its body
  // is copied out and can go now.
  std::string().swap(request_.body);
}

bool HttpServerProtocol::Saturated() const noexcept {
  return held_.load(std::memory_order_acquire) >= max_held_ ||
         held_bytes_.load(std::memory_order_acquire) >= max_held_bytes_;
}

bool HttpServerProtocol::SaturatedLocked() const {
  return exchanges_.size() >= max_held_ || held_bytes_.load(std::memory_order_relaxed) >= max_held_bytes_;
}

void HttpServerProtocol::Reply(net::Connection& connection, ServerCall& call,
                   const google::protobuf::Message& response) {
  net::BufferChain reply;
  const bool ok = PackReply(call, response, &reply);
  call.OnReplyPacked(ok, reply);
  SendReply(connection, call.correlation_id(), std::move(reply));
}

bool HttpServerProtocol::PackReply(ServerCall& call, const google::protobuf::Message& response,
                                   net::BufferChain* out) {
  const Exchange exchange = ExchangeOf(call.correlation_id());
  Controller& controller = call.controller();
  if (exchange.stream) return PackStreamEnd(call, exchange, out);
  int code = controller.ErrorCode();
  std::string error_text = controller.ErrorText();
  if (!controller.Failed()) {
    std::string body;
    bool packed = false;
    if (exchange.json) {
      // reuse's (and a user strategy's) pooled objects may hold more than their bytes say
      // (docs/memory.md): print those from the wire.
      packed = protocol::MessageToJson(response, &body, &error_text,
                                       /*via_wire=*/!call.messages().response_plain());
    } else if (!(packed = response.IsInitialized() && response.SerializeToString(&body))) {
      error_text = "cannot serialize " + response.GetTypeName() + ": " +
                   response.InitializationErrorString();
    }
    if (packed && exchange.web != WebRpc::kNone) {
      PackWebReply(controller, exchange, body, out);
      return true;
    }
    if (packed) {
      protocol::HttpResponseHead head = HeadFor(200, exchange);
      head.content_type = exchange.json ? protocol::kJsonType : protocol::kProtoType;
      // As brpc: gzip when the handler asked for it and the client accepts it.
      EncodeBody(std::move(head), body,
                 exchange.accepts_gzip &&
                     controller.response_compress_type() == COMPRESS_TYPE_GZIP,
                 out);
      return true;
    }
    code = ERESPONSE;
  }
  EncodeError(code, error_text, exchange, /*too_large=*/false, out,
              controller.Failed() ? controller.grpc_status_details() : std::string_view());
  return false;
}

void HttpServerProtocol::SendReply(net::Connection& connection, int64_t key,
                                   net::BufferChain&& reply) {
  Deliver(connection, key, std::move(reply), /*final=*/true);
}

void HttpServerProtocol::SendError(net::Connection& connection, int64_t key,
                                   const CallError& error) {
  net::BufferChain bytes;
  EncodeError(error.code, error.text, ExchangeOf(key),
              /*too_large=*/error.cause == ErrorCause::kRequestTooLarge, &bytes);
  Deliver(connection, key, std::move(bytes), /*final=*/true);
}

void HttpServerProtocol::EncodeError(int code, std::string_view text, const Exchange& exchange,
                                     bool too_large, net::BufferChain* out,
                                     std::string_view details) {
  if (exchange.web != WebRpc::kNone) {
    EncodeWebError(code, text, exchange, too_large, out, details);
    return;
  }
  protocol::HttpResponseHead head = ErrorHead(code, text, exchange);
  if (too_large) head.status = 413;
  protocol::EncodeHttpResponse(head, WithNewline(text), out);
}

void HttpServerProtocol::EncodeBody(protocol::HttpResponseHead head, const std::string& body,
                                    bool gzip, net::BufferChain* out) {
  if (gzip) {
    net::BufferChain plain, zipped;
    plain.Append(body);
    std::string ignored;
    if (protocol::Compress(2, plain, &zipped, &ignored)) {
      head.headers.emplace_back("Content-Encoding", "gzip");
      protocol::EncodeHttpHead(head, zipped.size(), out);
      out->Append(std::move(zipped));
      return;
    }
  }
  protocol::EncodeHttpResponse(head, body, out);
}

protocol::HttpResponseHead HttpServerProtocol::HeadFor(int status, const Exchange& exchange) {
  protocol::HttpResponseHead head;
  head.status = status;
  head.keep_alive = exchange.keep_alive;
  head.version_minor = exchange.version_minor;
  if (exchange.cors_origin != nullptr) AddCorsReplyHeaders(*exchange.cors_origin, &head.headers);
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
    copy.request_compress = it->second.request_compress;
    copy.accepts_gzip = it->second.accepts_gzip;
    copy.web = it->second.web;
    copy.cors_origin = it->second.cors_origin;
    copy.stream = it->second.stream;
  }
  return copy;
}

void HttpServerProtocol::Register(int64_t sequence, const Exchange& settings) {
  std::lock_guard lock(mutex_);
  Exchange& exchange = exchanges_[sequence];  // "100 Continue" may have created it
  held_.store(exchanges_.size(), std::memory_order_release);
  exchange.keep_alive = settings.keep_alive;
  exchange.version_minor = settings.version_minor;
  exchange.json = settings.json;
  exchange.request_compress = settings.request_compress;
  exchange.accepts_gzip = settings.accepts_gzip;
  exchange.web = settings.web;
  exchange.cors_origin = settings.cors_origin;
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
  bool drained = false, close = false;
  {
    std::unique_lock lock(mutex_);
    const bool was_saturated = SaturatedLocked();
    size_t held_bytes = held_bytes_.load(std::memory_order_relaxed);
    Exchange& exchange = exchanges_[sequence];
    held_bytes -= exchange.unsent.held_bytes();
    exchange.unsent.Append(std::move(bytes));
    held_bytes += exchange.unsent.held_bytes();
    exchange.done = exchange.done || final;
    // Replies whose turn came move to ready_, in sequence order; nothing follows a closing one.
    while (!closing_ && !exchanges_.empty() && exchanges_.begin()->first == next_to_write_) {
      Exchange& next = exchanges_.begin()->second;
      held_bytes -= next.unsent.held_bytes();
      ready_.Append(std::move(next.unsent));
      next.unsent.clear();
      if (!next.done) break;
      closing_ = !next.keep_alive;
      if (next.stream) {
        web_streams_.erase(exchanges_.begin()->first);
        streams_.store(static_cast<int>(web_streams_.size()), std::memory_order_release);
      }
      exchanges_.erase(exchanges_.begin());
      ++next_to_write_;
    }
    held_bytes_.store(held_bytes, std::memory_order_release);
    held_.store(exchanges_.size(), std::memory_order_release);
    drained = was_saturated && !SaturatedLocked();
    const bool writer = !writing_;  // else the thread writing takes ready_ too
    writing_ = true;
    while (writer) {
      if (ready_.empty()) {
        writing_ = false;
        close = closing_ && !close_issued_;
        close_issued_ = close_issued_ || close;
        break;
      }
      net::BufferChain out = std::move(ready_);
      ready_.clear();
      lock.unlock();
      connection.Write(std::move(out));  // may close the connection and deliver on this thread
      lock.lock();
    }
  }
  // Reading paused while replies were held: see whether it may resume, now that they are the
  // connection's (outside the lock: the connection's backlog lock is taken there).
  if (drained) owner_.OnRepliesDrained(connection);
  if (close) connection.CloseWhenFlushed();  // may run OnClosed() here: outside the lock
}

}  // namespace arenarpc::server
