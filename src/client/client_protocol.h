#pragma once
// ClientProtocol: the part of a client call that depends on its wire protocol (baidu_std, gRPC),
// as brpc's Protocol marks the client's slots: serialize + pack the request (ClientRequest), parse
// replies and route them to their attempt (ClientSession, one per connection), handle connection
// events. Everything else — attempts, retries, deadlines, balancing (ClientCall), connecting,
// admission against max_unwritten_bytes, the watchdog, the pool (ClientConnection) — is shared.
//
// Data goes one way: ClientCall has its protocol pack each attempt, ClientConnection hands the
// packed request to its session, which writes it; bytes read go to the session, which decodes
// them and hands each reply (a ClientReply) back through the connection to the call.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include "arenarpc/buffer_chain.h"
#include "arenarpc/controller.h"
#include "client/baidu_std_request_frame.h"
#include "protocol/h2/grpc_client_session.h"

namespace google::protobuf {
class Message;
class MethodDescriptor;
}  // namespace google::protobuf

namespace arenarpc {
struct ChannelOptions;
}

namespace arenarpc::client {

class ChannelCore;
class ClientSession;
class ClientSessionHost;

// One attempt's request as its protocol packed it: a whole baidu_std frame, or a gRPC call for
// the connection's HTTP/2 session. A new protocol adds its form here.
using PackedRequest = std::variant<BaiduStdRequestFrame, protocol::h2::GrpcClientRequest>;

// What packing one attempt needs beyond the prepared request.
struct AttemptFacts {
  int64_t correlation_id = 0;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  std::string_view authority;  // the server's "ip:port"
};

// A call's request, serialized once (Prepare) and packed again for every attempt.
class ClientRequest {
 public:
  virtual ~ClientRequest() = default;
  // Under the call's lock, on the caller's or a loop thread.
  virtual PackedRequest Pack(const AttemptFacts& attempt) = 0;
  // The serialized (maybe compressed) request's bytes, attachment included (rpcz).
  virtual uint64_t payload_bytes() const noexcept = 0;
};

// One reply of the server to an attempt, decoded by a session; read by the call under its lock.
class ClientReply {
 public:
  // 0: the server answered the call. Else the error it (or the wire) reported, with *text: the
  // attempt failed after the request reached the server (retried as such).
  virtual int ServerError(std::string* text) = 0;
  // A failed attempt's details for the caller's controller (gRPC: grpc-status-details-bin).
  virtual void ReadFailure(Controller& /*controller*/) {}
  // Reads the answer into the caller's controller and response: 0, or an error code and *text.
  virtual int ReadInto(Controller& controller, google::protobuf::Message* response,
                       size_t max_decompressed_size, std::string* text) = 0;
  // The reply's payload bytes as received, attachment included (rpcz).
  virtual uint64_t payload_bytes() const noexcept = 0;

 protected:
  ~ClientReply() = default;  // lives on the session's stack
};

// The request of one call as the caller gave it (ClientCall::Prepare).
struct RequestSource {
  const google::protobuf::MethodDescriptor& method;
  const google::protobuf::Message& request;
  Controller& controller;
  std::string credential;  // a ClientInterceptor's; empty = ChannelOptions::auth's, if any
};

class ClientProtocol {
 public:
  virtual ~ClientProtocol() = default;
  virtual std::string_view name() const noexcept = 0;
  // Caller's thread: serializes (and compresses) the request. nullptr: it cannot be sent, for
  // *code (EREQUEST, ERPCAUTH) and *text.
  virtual std::unique_ptr<ClientRequest> Prepare(RequestSource source, ChannelCore& core,
                                                 int* code, std::string* text) const = 0;
  // One connection's protocol state, on the connection's loop thread.
  virtual std::unique_ptr<ClientSession> NewSession(ClientSessionHost& host,
                                                    const ChannelOptions& options) const = 0;
};

// The protocols a channel speaks (ChannelOptions::protocol).
const ClientProtocol& BaiduStdClientProtocol();
const ClientProtocol& GrpcClientProtocol();

}  // namespace arenarpc::client
