#pragma once
// ReplySink: all a call needs of its protocol once it was decoded — pack and send its reply, or
// an error, and (HTTP/2) whether its client canceled it. The protocol of the call's connection
// implements it; ServerCall holds nothing else of the protocol, so it can be driven by a fake
// sink in a test. Calls are named by their key (ServerCall::correlation_id()).

#include <google/protobuf/message.h>

#include <cstdint>
#include <memory>
#include <string_view>

#include "arenarpc/buffer_chain.h"
#include "net/connection.h"

namespace arenarpc::server {

class CancelState;
class ServerCall;

// Why a call is answered with an error, where a protocol words some causes its own way.
enum class ErrorCause {
  kError,            // the code says it all
  kRequestTooLarge,  // EREQUEST past max_request_memory (HTTP: 413)
  // ELIMIT past the connection's (or its kind of call's) share of max_fibers. gRPC:
  // RESOURCE_EXHAUSTED, a quota of the client's own, where a plain ELIMIT is UNAVAILABLE (brpc's
  // mapping: try another server).
  kOverShare,
};

struct CallError {
  int code = 0;
  std::string_view text;
  ErrorCause cause = ErrorCause::kError;
};

class ReplySink {
 public:
  virtual ~ReplySink() = default;
  virtual std::string_view name() const noexcept = 0;  // "baidu_std", "http", "h2:grpc"

  // Answers a finished call (any thread): packs its reply — its controller says whether the
  // handler failed; a response that cannot be packed fails the call with ERESPONSE — hands the
  // packed bytes to call.OnReplyPacked() exactly once, then sends them. The call is counted in
  // between, so a client that has its reply also sees its call counted.
  virtual void Reply(net::Connection& connection, ServerCall& call,
                     const google::protobuf::Message& response) = 0;
  // Answers the call `key` with an error instead of a reply (its handler did not run). Any thread.
  virtual void SendError(net::Connection& connection, int64_t key, const CallError& error) = 0;

  // A protocol that cancels one call without closing the connection (HTTP/2's RST_STREAM): the
  // call `key` was canceled; `state` fires when it is. Any thread.
  virtual bool CallCanceled(int64_t /*key*/) { return false; }
  virtual void WatchCancel(int64_t /*key*/, const std::shared_ptr<CancelState>& /*state*/) {}
  // The call's handler serves a stream and holds its fiber until the stream ends (gRPC
  // streaming): it counts in FiberShares' streaming shares.
  virtual bool IsStreamCall(int64_t /*key*/) { return false; }
};

}  // namespace arenarpc::server
