#pragma once
// ServerProtocol: the part of a server connection that depends on its wire protocol — how requests
// are decoded and how replies and errors are packed (as brpc's Protocol: parse / process / pack,
// one object per connection instead of globals). Everything else on a call's path — admission,
// the backlog, limits, ServerCall, the memory strategy, stats — is ServerConnection's and
// ServerCall's, shared by every protocol.
//
// A connection's protocol is recognised from its first bytes (protocol/wire_protocol.h) and looked
// up in server_protocol_table.h.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "arenarpc/buffer_chain.h"
#include "net/connection.h"
#include "server/reply_sink.h"

namespace arenarpc::server {

class AdmittedTask;
class ServerCall;
struct RequestPayload;
struct ServerState;

// What admission needs to know of one decoded request (ServerProtocol::Next()). Its views point
// into what the protocol keeps of the request until its next Next().
struct CallHead {
  std::string_view service_name, method_name;  // resolved as spec §5.2
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

// What a protocol tells the connection that owns it (ServerConnection).
class ProtocolOwner {
 public:
  // The replies the protocol held went below its bound (Saturated() is false again): decoding
  // and reading may resume.
  virtual void OnRepliesDrained(net::Connection& connection) = 0;

 protected:
  ~ProtocolOwner() = default;
};

// A protocol is also the ReplySink of the calls it decoded (reply_sink.h).
class ServerProtocol : public ReplySink {
 public:
  enum class Step {
    kNeedMore,           // no complete request in the input
    kCall,               // a method call, described by *head, waits for admission
    kTask,               // other work (an HTTP page) for the reply head->key waits for admission
    kAnswered,           // a request was answered or rejected without admission
    kMalformed,          // bad input: count it and close the connection now (error() says why)
    kMalformedAnswered,  // bad input, answered: count it; the protocol closes after the answer
    // The protocol decoded its share of the input for this turn and more waits in it: other
    // connections go first, then Next() runs again on what is left (nothing new is read).
    kYield,
  };

  // Decodes the next request off `input`. A protocol decodes and packs; the connection admits:
  // after kCall it calls Admitted() if the call was admitted (a rejection is answered through
  // SendError()), after kTask TakeTask() if the task was.
  virtual Step Next(net::Connection& connection, net::BufferChain& input,
                    std::chrono::steady_clock::time_point read_at, CallHead* head) = 0;
  // The call Next() decoded was admitted as `call`: fills its Controller from the request (ids,
  // deadline, compression, metadata, attachment, stream offer) and moves the request's bytes
  // into *payload, with what opening them needs (request_opener.h).
  virtual void Admitted(net::Connection& connection, ServerCall& call, RequestPayload* payload) = 0;
  // The call or task Next() decoded was rejected (and answered): what it holds is released.
  virtual void Rejected() = 0;
  // The task Next() decoded was admitted: the work, and the bytes of its request. Only protocols
  // that answer kTask override it.
  virtual std::unique_ptr<AdmittedTask> TakeTask(net::Connection& connection, size_t* request_size);
  virtual const std::string& error() const noexcept = 0;  // after kMalformed*
  // Bytes of a request that has not completed were taken off the input (Next()'s thread).
  virtual bool InRequest() const noexcept { return false; }
  // The protocol holds as many replies waiting for their turn as it may (HTTP's in-order replies):
  // decoding and reading pause until ProtocolOwner::OnRepliesDrained(). Any thread; lock-free.
  virtual bool Saturated() const noexcept { return false; }
  // Unwritten output drained after the protocol asked (net::Connection::NotifyWhenDrained).
  virtual void OnOutputDrained(net::Connection& /*connection*/) {}
  // Memory held by replies waiting for their turn (not yet handed to the connection); counts in
  // max_unwritten_bytes with the connection's own unsent bytes. Any thread; lock-free.
  virtual size_t HeldBytes() const noexcept { return 0; }

  // The connection closed (any thread, once): what the protocol keeps per connection beyond its
  // calls (baidu_std's streams) is released.
  virtual void OnClosed() {}
  // Server::Stop() began: calls in flight finish, new ones get ELOGOFF (HTTP/2: GOAWAY).
  virtual void OnServerStopping(net::Connection& /*connection*/) {}
};

}  // namespace arenarpc::server
