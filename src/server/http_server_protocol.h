#pragma once
// HTTP/1.x on a server connection (docs/http.md): keep-alive, pipelining with replies in request
// order, HTTP/1.0 and "Connection: close". "POST /pkg.Service/Method" (or "/Service/Method")
// calls the method through the shared call path with a JSON body (or binary protobuf with
// Content-Type application/proto or application/x-protobuf); other paths are the server's
// built-in services (BuiltinRegistry), unless they are turned off or moved to internal_port.

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>

#include "protocol/http/http_request_decoder.h"
#include "protocol/http/http_response.h"
#include "server/server_protocol.h"

namespace arenarpc::server {

class HttpServerProtocol final : public ServerProtocol {
 public:
  HttpServerProtocol(ServerState& state, bool internal_port);
  static std::unique_ptr<ServerProtocol> Create(ServerState& state, bool internal_port);

  std::string_view name() const noexcept override { return "HTTP"; }
  Step Next(ServerConnection& server, net::Connection& connection, net::BufferChain& input,
            std::chrono::steady_clock::time_point read_at,
            std::unique_ptr<PendingCall>* call) override;
  const std::string& error() const noexcept override { return decoder_.error(); }
  // Requests whose replies are not written yet reached max_queued_requests_per_connection (a
  // reply waits for the ones before it: the bound on what a pipelining client makes it hold).
  bool Saturated() const noexcept override;
  bool OpenRequest(ServerCall& call, const RequestPayload& payload, protocol::PayloadBytes* bytes,
                   std::string* error_text) override;
  bool PackReply(ServerCall& call, const google::protobuf::Message& response,
                 net::BufferChain* out) override;
  void SendReply(net::Connection& connection, int64_t key, net::BufferChain&& reply) override;
  void SendError(net::Connection& connection, int64_t key, int code,
                 std::string_view text) override;
  void SendRequestTooLarge(net::Connection& connection, int64_t key,
                           std::string_view text) override;

 private:
  // One request's place in the reply order, and what its reply depends on.
  struct Exchange {
    net::BufferChain unsent;  // bytes of this reply not written yet (an earlier reply is missing)
    bool done = false;        // the final response is in `unsent` (or was written)
    bool keep_alive = true;
    int version_minor = 1;
    bool json = true;  // the body is JSON (else binary protobuf)
  };

  Step Route(ServerConnection& server, net::Connection& connection, protocol::HttpRequest& request,
             int64_t sequence, std::chrono::steady_clock::time_point read_at,
             std::unique_ptr<PendingCall>* call);
  Step ServeBuiltin(net::Connection& connection, const protocol::HttpRequest& request,
                    int64_t sequence);
  Step CallMethod(ServerConnection& server, net::Connection& connection,
                  protocol::HttpRequest& request, int64_t sequence, std::string_view service,
                  std::string_view method, std::chrono::steady_clock::time_point read_at,
                  std::unique_ptr<PendingCall>* call);

  static protocol::HttpResponseHead HeadFor(int status, const Exchange& exchange);
  static protocol::HttpResponseHead ErrorHead(int code, std::string_view text,
                                              const Exchange& exchange);
  Exchange ExchangeOf(int64_t sequence);  // a copy of its settings
  void Register(int64_t sequence, bool keep_alive, int version_minor, bool json);
  // A complete response (head + body) for `sequence`, in order.
  void Respond(net::Connection& connection, int64_t sequence, protocol::HttpResponseHead head,
               std::string_view body);
  // Bytes for `sequence`; `final`: its response is complete. Writes every reply whose turn came.
  void Deliver(net::Connection& connection, int64_t sequence, net::BufferChain&& bytes, bool final);

  ServerState& state_;
  const bool internal_port_;
  protocol::HttpRequestDecoder decoder_;  // Next() only
  int64_t next_sequence_ = 0;             // Next() only
  bool stopped_ = false;                  // Next() only: no more requests on this connection

  const size_t max_held_;
  ServerConnection* owner_ = nullptr;  // set by the first Next(); outlives this (owns it)
  std::atomic<size_t> held_{0};        // exchanges_.size(), for Saturated()
  std::mutex mutex_;
  int64_t next_to_write_ = 0;
  std::map<int64_t, Exchange> exchanges_;  // not fully written yet, by sequence
};

}  // namespace arenarpc::server
