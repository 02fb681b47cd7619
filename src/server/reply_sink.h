#pragma once
// ReplySink: all a call needs of its protocol once it was decoded — pack its reply, send it or
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

  // Packs the reply of a finished call; its controller says whether the handler failed. false:
  // the call failed (the handler's error, or the response could not be packed: ERESPONSE).
  virtual bool PackReply(ServerCall& call, const google::protobuf::Message& response,
                         net::BufferChain* out) = 0;
  // Sends a packed reply / an error reply for the call `key`. Any thread.
  virtual void SendReply(net::Connection& connection, int64_t key, net::BufferChain&& reply) = 0;
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
