// HttpServerProtocol's grpc-web and Connect calls (docs/http.md, "Browsers: grpc-web and
// Connect"): their bodies, CORS preflights, deadlines, admission, replies and errors, and server
// streaming over HTTP/1.1 (ServerStreamTransport). Kept apart from the brpc HTTP path's file.
#include <google/protobuf/message.h>

#include <algorithm>
#include <charconv>
#include <limits>

#include "arenarpc/error_codes.h"
#include "protocol/compression.h"
#include "protocol/h2/grpc_wire.h"
#include "protocol/http/connect_wire.h"
#include "protocol/http/grpc_web_wire.h"
#include "protocol/http/json_message.h"
#include "server/connect_json.h"
#include "server/http_cors.h"
#include "server/http_server_protocol.h"
#include "server/method_entry.h"
#include "server/server_call.h"
#include "util/base64.h"

namespace arenarpc::server {

namespace {

constexpr std::string_view kGrpcWebReplyType = "application/grpc-web+proto";
constexpr std::string_view kGrpcWebTextReplyType = "application/grpc-web-text+proto";
constexpr std::string_view kConnectProtoStreamType = "application/connect+proto";
constexpr std::string_view kConnectJsonStreamType = "application/connect+json";

// grpc-encoding as a compress type (protocol/compression.h); -1 one the server does not decode.
int GrpcCompressType(const std::string* encoding) {
  if (encoding == nullptr || encoding->empty() || *encoding == "identity") return 0;
  if (*encoding == "gzip") return 2;
  if (*encoding == "deflate") return 3;
  return -1;
}

// grpc-web's grpc-status-details-bin trailer for a handler's google.rpc.Status, when it set one.
std::vector<std::pair<std::string, std::string>> DetailsTrailer(std::string_view details) {
  if (details.empty()) return {};
  return {{std::string(protocol::h2::kStatusDetailsHeader),
           protocol::h2::EncodeBinaryHeader(details)}};
}

}  // namespace

void HttpServerProtocol::EncodeWebError(int code, std::string_view text, const Exchange& exchange,
                                        bool too_large, net::BufferChain* out,
                                        std::string_view details) {
  std::string status_text;
  const int status =
      too_large ? static_cast<int>(protocol::h2::GrpcStatus::kResourceExhausted)
                : static_cast<int>(protocol::h2::GrpcStatusForError(code, text, &status_text));
  if (too_large) status_text = text;
  if (exchange.web == WebRpc::kConnectStream) {  // always 200: the status is the end-stream's
    std::string framed;
    protocol::AppendEnvelope(protocol::kConnectEndStreamFlag,
                             protocol::ConnectEndStreamJson(status, status_text, {}, details),
                             &framed);
    protocol::HttpResponseHead head = HeadFor(200, exchange);
    head.content_type = exchange.json ? kConnectJsonStreamType : kConnectProtoStreamType;
    protocol::EncodeHttpResponse(head, framed, out);
    return;
  }
  if (exchange.web == WebRpc::kConnect) {
    protocol::HttpResponseHead head = HeadFor(protocol::HttpStatusForConnectCode(status), exchange);
    head.content_type = protocol::kJsonType;
    protocol::EncodeHttpResponse(head, protocol::ConnectErrorJson(status, status_text, details),
                                 out);
    return;
  }
  // grpc-web: 200 and a body of the trailers frame alone (a page's fetch() reads the body; the
  // headers need CORS exposure).
  std::string framed;
  protocol::AppendGrpcWebTrailers(status, status_text, DetailsTrailer(details), &framed);
  protocol::HttpResponseHead head = HeadFor(200, exchange);
  const bool text_mode = exchange.web == WebRpc::kGrpcWebText;
  head.content_type = text_mode ? kGrpcWebTextReplyType : kGrpcWebReplyType;
  protocol::EncodeHttpResponse(head, text_mode ? util::EncodeBase64(framed, true) : framed, out);
}

void HttpServerProtocol::OpenWebBody(Exchange* exchange) {
  std::string& body = request_.body;
  size_t bad_at = 0;
  if (exchange->web == WebRpc::kGrpcWebText && !util::DecodeBase64InPlace(&body, &bad_at)) {
    web_invalid_ = "grpc-web-text body is not base64 (at byte " + std::to_string(bad_at) + ")";
    return;
  }
  std::string_view message;
  bool compressed = false;
  if (!protocol::UnframeGrpcWebRequest(body, &message, &compressed, &web_invalid_)) return;
  body_offset_ = body.size() - message.size();
  exchange->request_compress = 0;
  if (!compressed) return;
  const std::string* encoding = request_.Header(
      exchange->web == WebRpc::kConnectStream ? "connect-content-encoding" : "grpc-encoding");
  exchange->request_compress = GrpcCompressType(encoding);
  if (exchange->request_compress <= 0) {
    exchange->request_compress = 0;
    web_invalid_ = std::string("compressed message with ") +
                   (exchange->web == WebRpc::kConnectStream ? "connect-content-encoding"
                                                            : "grpc-encoding") +
                   " '" + (encoding != nullptr ? *encoding : std::string()) +
                   "' (gzip, deflate; identity is not compressed)";
  }
}

void HttpServerProtocol::OpenConnectGet(Exchange* exchange) {
  exchange->web = WebRpc::kConnect;
  web_ = WebRpc::kConnect;
  web_invalid_.clear();
  body_offset_ = 0;
  protocol::ConnectGetQuery query;
  if (!protocol::ParseConnectGetQuery(request_.query, &query, &web_invalid_)) return;
  exchange->json = query.json;
  request_.body = std::move(query.message);
  const std::string* compression = query.compression.empty() ? nullptr : &query.compression;
  exchange->request_compress = GrpcCompressType(compression);
  if (exchange->request_compress < 0) {
    exchange->request_compress = 0;
    web_invalid_ = "compression=" + query.compression + " is not served (gzip, deflate, identity)";
  }
}

void HttpServerProtocol::AnswerPreflight(net::Connection& connection, int64_t sequence) {
  const std::string& origin = *request_.Header("origin");
  const std::string* allowed = CorsMatch(state_.config.options, origin);
  if (allowed == nullptr) {
    protocol::HttpResponseHead refused;
    refused.status = 403;
    Respond(connection, sequence, std::move(refused),
            "origin " + origin + " is not in the server's cors_allowed_origins\n");
    return;
  }
  protocol::HttpResponseHead head;
  head.status = 204;
  AddCorsPreflightHeaders(state_.config.options, *allowed, &head.headers);
  Respond(connection, sequence, std::move(head), {});
}

void HttpServerProtocol::WebCallHead(net::Connection& connection, int64_t sequence,
                                     const MethodEntry* entry, CallHead* head) {
  const protocol::HttpRequest& request = request_;
  if (!web_invalid_.empty()) {
    head->invalid_code = EREQUEST;
    head->invalid_text = web_invalid_;
  }
  // grpc-web's deadline is grpc-timeout (gRPC's format); Connect's Connect-Timeout-Ms.
  const bool grpc_web = web_ == WebRpc::kGrpcWeb || web_ == WebRpc::kGrpcWebText;
  if (const std::string* value = request.Header(grpc_web ? "grpc-timeout" : "connect-timeout-ms")) {
    int64_t timeout_ms = -1;
    if (grpc_web) {
      timeout_ms = protocol::h2::ParseGrpcTimeoutMs(*value);
    } else if (const auto [end, error] =
                   std::from_chars(value->data(), value->data() + value->size(), timeout_ms);
               error != std::errc() || end != value->data() + value->size()) {
      timeout_ms = -1;
    }
    if (timeout_ms < 0) {
      invalid_text_ = std::string(grpc_web ? "grpc-timeout" : "connect-timeout-ms") + ": '" +
                      *value + "' is not a " +
                      (grpc_web ? "gRPC timeout" : "number of milliseconds >= 0");
      head->invalid_code = EREQUEST;
      head->invalid_text = invalid_text_;
    } else if (timeout_ms > 0 || grpc_web) {
      head->timeout_ms = static_cast<int32_t>(
          std::clamp<int64_t>(timeout_ms, 1, std::numeric_limits<int32_t>::max()));
    }
  }
  stream_call_ = false;
  if (entry == nullptr) return;
  if (entry->grpc_stream) {
    OpenStream(connection, sequence, *entry, head);
  } else if (web_ == WebRpc::kConnectStream && head->invalid_code == 0) {
    invalid_text_ = "application/connect+proto|json calls streaming rpcs; " +
                    entry->full_name + " is unary (application/proto or application/json)";
    head->invalid_code = EREQUEST;
    head->invalid_text = invalid_text_;
  }
}

void HttpServerProtocol::OpenStream(net::Connection& connection, int64_t sequence,
                                    const MethodEntry& entry, CallHead* head) {
  const char* refused = nullptr;
  if (entry.descriptor->client_streaming()) {
    refused = " streams requests: over HTTP/1.1 only server-streaming rpcs are served";
  } else if (web_ == WebRpc::kConnect) {
    refused = " is a streaming rpc: Connect calls it with application/connect+proto or +json";
  } else if (request_.version_minor == 0) {
    refused = ": server streaming needs HTTP/1.1 (a chunked reply)";
  }
  if (refused != nullptr) {
    if (head->invalid_code == 0) {
      invalid_text_ = entry.full_name + refused;
      head->invalid_code = EREQUEST;
      head->invalid_text = invalid_text_;
    }
    return;
  }
  auto stream = std::make_shared<WebStream>();
  if (head->timeout_ms > 0) stream->deadline = read_at_ + std::chrono::milliseconds(head->timeout_ms);
  // The handler reads the request's message from here (StreamRead); the call's request is empty.
  stream->connection = &connection;
  stream->binding = entry.Binding();
  stream->request.assign(std::string_view(request_.body).substr(body_offset_));
  std::lock_guard lock(mutex_);
  auto it = exchanges_.find(sequence);
  if (it == exchanges_.end()) return;
  stream->request_compress = it->second.request_compress;
  it->second.stream = true;
  web_streams_[sequence] = std::move(stream);
  streams_.store(static_cast<int>(web_streams_.size()), std::memory_order_release);
  stream_call_ = true;
}

void HttpServerProtocol::DecodeWebCall(DecodedCall* call) {
  for (const auto& [name, value] : request_.headers) {  // grpc-web's and Connect's metadata
    if (protocol::IsWebTransportHeader(name)) continue;
    call->fields.user_fields.emplace_back(name, value);
  }
  const std::string_view message = std::string_view(request_.body).substr(body_offset_);
  call->payload.request_size = message.size();
  // A stream's handler reads the message from its WebStream (OpenStream).
  if (!stream_call_) call->payload.bytes.Append(message);
}

bool HttpServerProtocol::PackStreamEnd(ServerCall& call, const Exchange& exchange,
                                       net::BufferChain* out) {
  // Its messages went out as they were written: the end of the stream.
  Controller& controller = call.controller();
  const std::shared_ptr<WebStream> owned = StreamOf(call.correlation_id());
  if (!owned) {  // cannot happen while its exchange is there; answer as a failed call
    EncodeError(ECANCELED, "the stream is gone", exchange, /*too_large=*/false, out);
    return false;
  }
  WebStream& stream = *owned;
  int status = 0;
  std::string text;
  std::string_view details;
  if (controller.Failed()) {
    details = controller.grpc_status_details();
    status = static_cast<int>(
        protocol::h2::GrpcStatusForError(controller.ErrorCode(), controller.ErrorText(), &text));
  } else if (Clock::now() >= stream.deadline) {  // the handler gave up at the deadline
    status = static_cast<int>(protocol::h2::GrpcStatus::kDeadlineExceeded);
    text = "the stream's deadline passed";
  }
  const std::vector<std::pair<std::string, std::string>> metadata(
      controller.response_user_fields().begin(), controller.response_user_fields().end());
  EncodeStreamEnd(exchange, stream, status, text, metadata, out, details);
  return status == 0;
}

void HttpServerProtocol::PackWebReply(Controller& controller, const Exchange& exchange,
                                      const std::string& body, net::BufferChain* out) {
  protocol::HttpResponseHead head = HeadFor(200, exchange);
  for (const auto& [name, value] : controller.response_user_fields()) {  // metadata
    head.headers.emplace_back(name, protocol::HttpHeaderValue(value));
  }
  if (exchange.web != WebRpc::kGrpcWeb && exchange.web != WebRpc::kGrpcWebText) {  // Connect
    head.content_type = exchange.json ? protocol::kJsonType : protocol::kProtoType;
    EncodeBody(std::move(head), body,
               exchange.accepts_gzip && controller.response_compress_type() == COMPRESS_TYPE_GZIP,
               out);
    return;
  }
  std::string framed;
  framed.reserve(body.size() + 64);
  protocol::AppendGrpcWebMessage(body, /*compressed=*/false, &framed);
  protocol::AppendGrpcWebTrailers(0, {}, {}, &framed);
  const bool text = exchange.web == WebRpc::kGrpcWebText;
  head.content_type = text ? kGrpcWebTextReplyType : kGrpcWebReplyType;
  protocol::EncodeHttpResponse(head, text ? util::EncodeBase64(framed, true) : framed, out);
}

protocol::HttpResponseHead HttpServerProtocol::StreamHead(
    const Exchange& exchange, const std::vector<std::pair<std::string, std::string>>& metadata) {
  protocol::HttpResponseHead head = HeadFor(200, exchange);
  switch (exchange.web) {
    case WebRpc::kGrpcWebText:
      head.content_type = kGrpcWebTextReplyType;
      break;
    case WebRpc::kConnectStream:
      head.content_type = exchange.json ? kConnectJsonStreamType : kConnectProtoStreamType;
      break;
    default:
      head.content_type = kGrpcWebReplyType;
      break;
  }
  for (const auto& [name, value] : metadata) {
    head.headers.emplace_back(name, protocol::HttpHeaderValue(value));
  }
  return head;
}

void HttpServerProtocol::EncodeStreamEnd(
    const Exchange& exchange, WebStream& stream, int grpc_status, std::string_view text,
    const std::vector<std::pair<std::string, std::string>>& metadata, net::BufferChain* out,
    std::string_view details) {
  bool head_sent = false;
  std::vector<std::pair<std::string, std::string>> trailers;
  {
    std::lock_guard lock(mutex_);
    head_sent = std::exchange(stream.head_sent, true);
    trailers = stream.trailers;
  }
  std::string frame;
  if (exchange.web == WebRpc::kConnectStream) {  // metadata went out as headers: trailers here
    protocol::AppendEnvelope(protocol::kConnectEndStreamFlag,
                             protocol::ConnectEndStreamJson(grpc_status, text, trailers, details),
                             &frame);
  } else {
    for (auto& [name, value] : trailers) value = protocol::HttpHeaderValue(value);
    for (auto& field : DetailsTrailer(details)) trailers.push_back(std::move(field));
    protocol::AppendGrpcWebTrailers(grpc_status, text, trailers, &frame);
  }
  if (exchange.web == WebRpc::kGrpcWebText) frame = util::EncodeBase64(frame, true);
  if (!head_sent) {  // nothing was written: one whole response
    protocol::EncodeHttpResponse(StreamHead(exchange, metadata), frame, out);
    return;
  }
  protocol::AppendHttpChunk(frame, out);
  out->Append(protocol::HttpLastChunk());
}

std::shared_ptr<HttpServerProtocol::WebStream> HttpServerProtocol::StreamOf(int64_t key) {
  std::lock_guard lock(mutex_);
  auto it = web_streams_.find(key);
  return it == web_streams_.end() ? nullptr : it->second;
}

bool HttpServerProtocol::IsStreamCall(int64_t key) {
  // Every call asks as it starts: without a stream on this connection, no lock is taken.
  if (streams_.load(std::memory_order_acquire) == 0) return false;
  return StreamOf(key) != nullptr;
}

int HttpServerProtocol::StreamRead(int64_t key, net::BufferChain* message, int* compress_type) {
  const Exchange exchange = ExchangeOf(key);
  const std::shared_ptr<WebStream> owned = StreamOf(key);
  if (!owned || owned->connection == nullptr) return ECANCELED;
  WebStream& stream = *owned;
  std::string bytes;
  {
    std::lock_guard lock(mutex_);
    if (stream.connection->closed()) return ECANCELED;
    if (stream.request_read) return ENODATA;  // a server-streaming call has one request message
    stream.request_read = true;
    bytes = std::move(stream.request);
    stream.request = std::string();
  }
  *compress_type = stream.request_compress;
  if (exchange.web != WebRpc::kConnectStream || !exchange.json) {
    message->Append(bytes);
    return 0;
  }
  // Connect's JSON codec: the message's JSON (inflated first) to its wire form.
  if (stream.request_compress > 0) {
    net::BufferChain compressed, inflated;
    compressed.Append(bytes);
    std::string detail;
    if (!protocol::Decompress(stream.request_compress, compressed, &inflated, &detail,
                              max_body_size_)) {
      return EREQUEST;
    }
    bytes = inflated.ToString();
  }
  *compress_type = 0;
  message->Append(StreamJsonToWire(*stream.binding, std::move(bytes)));
  return 0;
}

int HttpServerProtocol::StreamWaitRoom(int64_t key, size_t max_stream_bytes, bool wait,
                                       Clock::time_point until) {
  const std::shared_ptr<WebStream> stream = StreamOf(key);
  if (!stream || stream->connection == nullptr) return ECANCELED;
  net::Connection& connection = *stream->connection;
  until = std::min(until, stream->deadline);
  std::unique_lock lock(mutex_);
  for (;;) {
    const auto now = Clock::now();
    if (connection.closed() || now >= stream->deadline) return ECANCELED;
    // One HTTP/1.1 connection writes one reply at a time: what it holds is this stream's bytes
    // (or replies before it, which it waits for anyway).
    const size_t held =
        held_bytes_.load(std::memory_order_acquire) + connection.unwritten_held_bytes();
    if ((held == 0 || held < max_stream_bytes) && held < max_held_bytes_) return 0;
    if (!wait) return EAGAIN;
    if (now >= until) return ETIMEDOUT;
    // Drained notices come at half of max_unwritten_bytes; below that, look again shortly.
    if (held >= max_held_bytes_ / 2) connection.NotifyWhenDrained();
    stream->changed.wait_until(lock, std::min(until, now + std::chrono::milliseconds(5)));
  }
}

stream::StreamRegistry::Entry HttpServerProtocol::RegisterStream(int64_t key,
                                                                 std::string_view method) {
  const std::shared_ptr<WebStream> owned = StreamOf(key);
  if (!owned || owned->connection == nullptr || !state_.streams) return {};
  return state_.streams->Open(stats::StreamKind::kWeb, static_cast<uint64_t>(key), method,
                              owned->connection->id());
}

int HttpServerProtocol::StreamSend(int64_t key, net::BufferChain&& message, bool /*compressed*/,
                                   const std::map<std::string, std::string>* metadata) {
  const Exchange exchange = ExchangeOf(key);
  const std::shared_ptr<WebStream> owned = StreamOf(key);
  if (!owned || owned->connection == nullptr) return ECANCELED;
  WebStream& stream = *owned;
  net::Connection& connection = *stream.connection;
  if (connection.closed()) return ECANCELED;
  std::string payload = message.ToString();
  if (exchange.web == WebRpc::kConnectStream && exchange.json) {
    // Connect's JSON codec: the response's JSON, from its wire form.
    std::string json;
    if (!StreamWireToJson(*stream.binding, payload, &json)) return ERESPONSE;
    payload = std::move(json);
  }
  std::string frame;
  protocol::AppendEnvelope(0, payload, &frame);
  if (exchange.web == WebRpc::kGrpcWebText) frame = util::EncodeBase64(frame, true);
  net::BufferChain bytes;
  bool head_sent = false;
  {
    std::lock_guard lock(mutex_);
    head_sent = std::exchange(stream.head_sent, true);
  }
  if (!head_sent) {
    std::vector<std::pair<std::string, std::string>> headers;
    if (metadata != nullptr) headers.assign(metadata->begin(), metadata->end());
    protocol::EncodeChunkedHttpHead(StreamHead(exchange, headers), &bytes);
  }
  protocol::AppendHttpChunk(frame, &bytes);
  Deliver(connection, key, std::move(bytes), /*final=*/false);
  return 0;
}

void HttpServerProtocol::AddStreamTrailer(int64_t key, std::string name, std::string value) {
  const std::shared_ptr<WebStream> stream = StreamOf(key);
  if (!stream) return;
  std::lock_guard lock(mutex_);
  stream->trailers.emplace_back(std::move(name), std::move(value));
}

void HttpServerProtocol::WakeStreams() {
  if (streams_.load(std::memory_order_acquire) == 0) return;
  std::lock_guard lock(mutex_);
  for (auto& [sequence, stream] : web_streams_) stream->changed.notify_all();
}

void HttpServerProtocol::OnOutputDrained(net::Connection& /*connection*/) { WakeStreams(); }

void HttpServerProtocol::OnClosed() { WakeStreams(); }

}  // namespace arenarpc::server
