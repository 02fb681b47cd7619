#pragma once
// HTTP/1.x on a server connection (docs/http.md): keep-alive, pipelining with replies in request
// order, HTTP/1.0 and "Connection: close". "POST /pkg.Service/Method" (or "/Service/Method")
// calls the method through the shared call path with a JSON body (or binary protobuf with
// Content-Type application/proto or application/x-protobuf); other paths are the server's
// built-in services (BuiltinRegistry), unless they are turned off or moved to internal_port.
// Browsers' protocols on the same path (docs/http.md, "Browsers: grpc-web and Connect"):
// grpc-web (Content-Type application/grpc-web[+proto], -text in base64) and Connect's unary calls
// (a Connect-Protocol-Version header: errors as Connect's JSON), with CORS (ServerOptions::cors_*);
// server-streaming methods of a GrpcStreamService over grpc-web and Connect
// (application/connect+proto|json) reply with a chunked body, one envelope per message.

#include <atomic>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <mutex>

#include "arenarpc/controller.h"
#include "arenarpc/fiber.h"
#include "builtin/builtin_service.h"
#include "protocol/http/http_request_decoder.h"
#include "protocol/http/http_response.h"
#include "server/server_protocol.h"
#include "server/service_registry.h"
#include "server/stream_transport.h"

namespace arenarpc::server {

struct MethodBinding;
struct MethodEntry;

class HttpServerProtocol final : public ServerProtocol, public ServerStreamTransport {
 public:
  HttpServerProtocol(ServerState& state, ProtocolOwner& owner, bool internal_port);
  static std::unique_ptr<ServerProtocol> Create(ServerState& state, ProtocolOwner& owner,
                                                bool internal_port);

  std::string_view name() const noexcept override { return "HTTP"; }
  Step Next(net::Connection& connection, net::BufferChain& input,
            std::chrono::steady_clock::time_point read_at, Decoded* decoded) override;
  const std::string& error() const noexcept override { return decoder_.error(); }
  bool InRequest() const noexcept override { return decoder_.in_request(); }
  // Requests whose replies are not written yet reached max_queued_requests_per_connection, or
  // the replies waiting for their turn hold max_unwritten_bytes (a reply waits for the ones
  // before it: the bound on what a pipelining client makes it hold).
  bool Saturated() const noexcept override;
  size_t HeldBytes() const noexcept override {
    return held_bytes_.load(std::memory_order_acquire);
  }
  // A built-in page's reply for `sequence` (the answer to HEAD: its head only).
  void SendPage(net::Connection& connection, int64_t sequence, builtin::BuiltinReply&& reply,
                bool head_only);
  void Reply(net::Connection& connection, ServerCall& call,
             const google::protobuf::Message& response) override;
  void SendError(net::Connection& connection, int64_t key, const CallError& error) override;
  void OnOutputDrained(net::Connection& connection) override;
  void OnClosed() override;

  // Server streaming over grpc-web and Connect (ServerStreamTransport): the request's one
  // message, then each response message as a chunk; the call's reply is the last chunk (grpc-web's
  // trailers frame, Connect's end-of-stream envelope). StreamWaitRoom() counts the replies held
  // for their turn and the bytes the socket has not taken.
  bool IsStreamCall(int64_t key) override;
  int StreamRead(int64_t key, net::BufferChain* message, int* compress_type) override;
  int StreamWaitRoom(int64_t key, size_t max_stream_bytes, bool wait,
                     Clock::time_point until) override;
  int StreamSend(int64_t key, net::BufferChain&& message, bool compressed,
                 const std::map<std::string, std::string>* metadata) override;
  void AddStreamTrailer(int64_t key, std::string name, std::string value) override;
  bool StreamAcceptsGzip(int64_t /*key*/) override { return false; }
  size_t max_body_size() const noexcept override { return max_body_size_; }
  ServerState& state() const noexcept override { return state_; }
  // Its messages and bytes on the pages (kind "web"); bytes buffered are not followed here.
  stream::StreamRegistry::Entry RegisterStream(int64_t key, std::string_view method) override;

 private:
  // Reply()'s two halves. PackReply: false when the call failed (an error was packed instead).
  bool PackReply(ServerCall& call, const google::protobuf::Message& response,
                 net::BufferChain* out);
  void SendReply(net::Connection& connection, int64_t key, net::BufferChain&& reply);
  // The protocol a method call speaks (its Content-Type and headers).
  enum class WebRpc : uint8_t {
    kNone,         // brpc's HTTP+JSON / protobuf: errors in x-bd-error-* headers
    kGrpcWeb,      // application/grpc-web(+proto): enveloped message, trailers frame
    kGrpcWebText,  // application/grpc-web-text(+proto): the same, base64
    kConnect,      // a Connect unary call: errors as {"code": ..., "message": ...}
    kConnectStream,  // application/connect+proto|json: enveloped messages, end-stream JSON
  };

  // A server-streaming call's state (under mutex_), from its admission to its last chunk.
  struct WebStream {
    fiber::ConditionVariable changed;  // its writer waits here for room
    net::Connection* connection = nullptr;  // lives while the call does
    Clock::time_point deadline = Clock::time_point::max();
    std::string request;  // the request's message (Connect JSON: its JSON), until read
    bool request_read = false;
    int request_compress = 0;  // the message's codec (compressed envelope), 0 none
    std::shared_ptr<MethodBinding> binding;  // prototypes for Connect's JSON
    bool head_sent = false;
    std::vector<std::pair<std::string, std::string>> trailers;
  };

  // One request's place in the reply order, and what its reply depends on.
  struct Exchange {
    net::BufferChain unsent;  // bytes of this reply not written yet (an earlier reply is missing)
    bool done = false;        // the final response is in `unsent` (or was written)
    bool keep_alive = true;
    int version_minor = 1;
    bool json = true;  // the body is JSON (else binary protobuf)
    // Content-Encoding of the request body as a baidu_std compress type: 0 none, 2 gzip,
    // 3 deflate (zlib); -1 an encoding the server does not decode.
    int request_compress = 0;
    bool accepts_gzip = false;  // Accept-Encoding names gzip
    WebRpc web = WebRpc::kNone;
    // The cors_allowed_origins entry the request's Origin matched (an exact origin or "*"): the
    // reply says so. Points into the server's options.
    const std::string* cors_origin = nullptr;
    bool stream = false;  // a server-streaming call: its WebStream is in web_streams_
  };

  // request_, answered as `sequence` (its reply's `settings`): a method call, a page or an
  // answer.
  Step Route(net::Connection& connection, int64_t sequence, Exchange* settings,
             Decoded* decoded);
  Step ServeBuiltin(net::Connection& connection, int64_t sequence, DecodedTask* task);
  Step CallMethod(net::Connection& connection, int64_t sequence, std::string_view service,
                  std::string_view method, MethodEntry* entry, CallHead* head);
  // The rest of the call request_ is (its Controller's fields, its payload), once Route() said
  // kCall.
  void DecodeCall(const Exchange& settings, DecodedCall* call);
  // Kept out of the brpc HTTP path's functions (their code and inlining stay as they were):
  // a web call's decoding (metadata, its message), its reply, a stream's end.
  void DecodeWebCall(DecodedCall* call);
  void PackWebReply(Controller& controller, const Exchange& exchange, const std::string& body,
                    net::BufferChain* out);
  bool PackStreamEnd(ServerCall& call, const Exchange& exchange, net::BufferChain* out);
  // A Connect GET (?connect=v1&encoding=...&message=...): its message as the request's body, its
  // codec and compression in *exchange; web_invalid_ when the query is not a good one.
  void OpenConnectGet(Exchange* exchange);
  // A grpc-web or Connect call's part of *head: its deadline, why it is invalid, its stream.
  void WebCallHead(net::Connection& connection, int64_t sequence, const MethodEntry* entry,
                   CallHead* head);
  // The call `sequence` of a streaming method: a WebStream holding its request's message, or why
  // it cannot be one.
  void OpenStream(net::Connection& connection, int64_t sequence, const MethodEntry& entry,
                  CallHead* head);
  // A streaming call's last bytes: the final frame (and the chunked body's end once its head went
  // out; else a whole response). mutex_ not held.
  void EncodeStreamEnd(const Exchange& exchange, WebStream& stream, int grpc_status,
                       std::string_view text,
                       const std::vector<std::pair<std::string, std::string>>& metadata,
                       net::BufferChain* out, std::string_view details = {});
  // The head of a streaming reply (200, the protocol's Content-Type, metadata, CORS).
  static protocol::HttpResponseHead StreamHead(
      const Exchange& exchange, const std::vector<std::pair<std::string, std::string>>& metadata);
  std::shared_ptr<WebStream> StreamOf(int64_t key);  // nullptr: not (or no longer) a stream
  void WakeStreams();  // their writers look at the room again

  // request_'s body as a grpc-web call's message (base64 decoded, unframed): body_offset_,
  // exchange->request_compress; web_invalid_ when it is not one.
  void OpenWebBody(Exchange* exchange);
  // A CORS preflight (OPTIONS with Access-Control-Request-Method) for `sequence`.
  void AnswerPreflight(net::Connection& connection, int64_t sequence);
  static protocol::HttpResponseHead HeadFor(int status, const Exchange& exchange);
  static protocol::HttpResponseHead ErrorHead(int code, std::string_view text,
                                              const Exchange& exchange);
  // An error reply in the call's protocol: brpc's (x-bd-error-* headers, the text as body),
  // grpc-web's trailers frame or Connect's JSON. `too_large`: the request would hold more than
  // max_request_memory (HTTP 413, RESOURCE_EXHAUSTED).
  // `details`: the handler's google.rpc.Status for grpc-web and Connect (http_web_calls.cc).
  static void EncodeError(int code, std::string_view text, const Exchange& exchange,
                          bool too_large, net::BufferChain* out, std::string_view details = {});
  static void EncodeWebError(int code, std::string_view text, const Exchange& exchange,
                             bool too_large, net::BufferChain* out, std::string_view details);
  // head + body; gzip-compressed (Content-Encoding: gzip) when `gzip` and it compresses.
  static void EncodeBody(protocol::HttpResponseHead head, const std::string& body, bool gzip,
                         net::BufferChain* out);
  Exchange ExchangeOf(int64_t sequence);  // a copy of its settings
  void Register(int64_t sequence, const Exchange& settings);
  // A complete response (head + body) for `sequence`, in order.
  void Respond(net::Connection& connection, int64_t sequence, protocol::HttpResponseHead head,
               std::string_view body);
  // Bytes for `sequence`; `final`: its response is complete. Writes every reply whose turn came.
  // Writes outside mutex_ (a write that fails closes the connection, whose cancel callbacks may
  // finish calls and deliver again): one thread writes at a time, in sequence order.
  void Deliver(net::Connection& connection, int64_t sequence, net::BufferChain&& bytes, bool final);
  bool SaturatedLocked() const;  // mutex_ held

  ServerState& state_;
  const bool internal_port_;
  protocol::HttpRequestDecoder decoder_;  // Next() only
  int64_t next_sequence_ = 0;             // Next() only
  bool stopped_ = false;                  // Next() only: no more requests on this connection
  LastResolved last_resolved_;            // Next() only
  // The request Next() decoded last (the reading thread's): its call's CallHead points into it
  // until the next Next().
  protocol::HttpRequest request_;
  std::string invalid_text_;    // its CallHead::invalid_text
  WebRpc web_ = WebRpc::kNone;  // ... its protocol
  std::string web_invalid_;     // ... why its grpc-web body is not one message (empty: it is)
  size_t body_offset_ = 0;      // ... where its message starts in the body (grpc-web's envelope)
  bool stream_call_ = false;    // ... it is a server-streaming call (OpenStream)
  Clock::time_point read_at_;   // ... when its last bytes were read
  std::atomic<int> streams_{0};  // web_streams_.size(): IsStreamCall()'s lock-free "no"

  const size_t max_held_;
  const size_t max_held_bytes_;  // max_unwritten_bytes
  const size_t max_body_size_;   // what a compressed body may inflate to
  ProtocolOwner& owner_;      // outlives this (owns it)
  std::atomic<size_t> held_{0};        // exchanges_.size(), for Saturated()
  std::atomic<size_t> held_bytes_{0};  // memory of the exchanges' unsent bytes
  std::mutex mutex_;
  int64_t next_to_write_ = 0;
  std::map<int64_t, Exchange> exchanges_;  // not fully written yet, by sequence
  // The server-streaming calls among them (kept apart: a plain call's Exchange stays small).
  std::unordered_map<int64_t, std::shared_ptr<WebStream>> web_streams_;
  net::BufferChain ready_;   // bytes whose turn came, for the writing thread
  bool writing_ = false;     // a thread writes ready_ to the connection
  bool closing_ = false;     // a reply without keep-alive is complete: nothing follows it
  bool close_issued_ = false;
};

}  // namespace arenarpc::server
