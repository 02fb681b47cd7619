#pragma once
// gRPC on the client (docs/grpc.md): the connection speaks HTTP/2 and every call is a stream of
// one protocol::h2::GrpcClientSession. A request counts as sent once its HEADERS reached the
// kernel. Streaming calls (client/grpc_stream_call.h) share the session with unary ones.

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "client/client_protocol.h"
#include "client/client_session.h"
#include "protocol/h2/grpc_client_session.h"

namespace arenarpc::client {

class GrpcStreamCall;

class GrpcClientProtocolSession final : public ClientSession {
 public:
  GrpcClientProtocolSession(ClientSessionHost& host, const ChannelOptions& options);
  ~GrpcClientProtocolSession() override;

  void OnConnected() override { Flush(); }  // the preface, SETTINGS and the waiting calls
  size_t RequestBytes(const PackedRequest& request) const noexcept override;
  void Submit(int64_t correlation_id, PackedRequest&& request) override;
  void Abandon(int64_t correlation_id) override;
  bool OnInput(net::BufferChain& input) override;
  void Pump() override {}
  void OnClosed(int code, const std::string& text) override;
  uint64_t unsent_request_bytes() const noexcept override { return h2_.unsent_request_bytes(); }
  bool requests_waiting() const noexcept override { return false; }
  Clock::time_point partial_reply_since() const noexcept override { return {}; }
  size_t open_streams() const noexcept override { return streams_.size(); }

  // A streaming call under `tag` (a correlation id): open it, queue one request message, end its
  // request side, give back `bytes` of its response messages the caller has read (its window
  // reopens once all are), cancel it (RST_STREAM).
  void OpenStream(std::shared_ptr<GrpcStreamCall> call, int64_t tag,
                  protocol::h2::GrpcClientRequest request);
  void SendStream(int64_t tag, net::BufferChain message, bool gzip);
  void CloseStreamSend(int64_t tag);
  void ReleaseStream(int64_t tag, size_t bytes);
  void CancelStream(int64_t tag);

  const protocol::h2::GrpcClientSession& h2() const noexcept { return h2_; }

 private:
  // Writes what the session has to send, hands finished calls to their attempts and streams, and
  // closes the connection once a GOAWAY'd session has nothing left.
  void Flush();

  ClientSessionHost& host_;
  protocol::h2::GrpcClientSession h2_;
  struct StreamEntry {
    std::shared_ptr<GrpcStreamCall> call;
    uint64_t sent = 0;  // request bytes handed to the session (prefixes included)
  };
  std::unordered_map<int64_t, StreamEntry> streams_;
};

// The session of a gRPC channel's connection (ChannelCore::grpc()).
inline GrpcClientProtocolSession& GrpcSessionOf(ClientSession& session) {
  return static_cast<GrpcClientProtocolSession&>(session);
}

}  // namespace arenarpc::client
