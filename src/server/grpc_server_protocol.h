#pragma once
// gRPC over HTTP/2 on a server connection (docs/grpc.md): recognised by the HTTP/2 preface, each
// stream "POST /pkg.Service/Method" is a unary call of a registered method, admitted and run as
// a baidu_std call is (same admission, backlog, memory strategy); replies are gRPC responses with
// grpc-status trailers; grpc-web, grpc-web-text, Connect (JSON through server/connect_json) and
// CORS preflights (server/http_cors) on the same connection. grpc.health.v1.Health/Check is
// answered here (its Watch and reflection are built-in services: server/grpc_builtin_services.h).

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "arenarpc/fiber.h"
#include "arenarpc/server.h"
#include "protocol/h2/grpc_server_session.h"
#include "server/server_protocol.h"
#include "stream/stream_registry.h"
#include "server/stream_transport.h"

namespace arenarpc::server {

class CancelState;
struct MethodBinding;

// A streaming call's waits: its reader and writer fibers park here (under the protocol's mutex).
struct StreamWaits {
  fiber::ConditionVariable changed;
  net::Connection* connection = nullptr;  // lives while the call does
  int compress_type = 0;                   // grpc-encoding
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  std::vector<std::pair<std::string, std::string>> trailers;
  // Set by RegisterStream(): the bytes buffered each way are kept current in them.
  std::shared_ptr<stream::StreamCounters> counters;
  // Connect with JSON messages: converted with the method's prototypes (set as it is decoded).
  bool json = false;
  std::shared_ptr<MethodBinding> binding;
};

class GrpcServerProtocol final : public ServerProtocol, public ServerStreamTransport {
 public:
  explicit GrpcServerProtocol(ServerState& state);
  static std::unique_ptr<ServerProtocol> Create(ServerState& state, ProtocolOwner& owner,
                                                bool internal_port);
  // The session limits the server's options give (docs/grpc.md, "Limits").
  static protocol::h2::GrpcServerSession::Limits LimitsFor(const ServerOptions& options);

  std::string_view name() const noexcept override { return "h2:grpc"; }
  Step Next(net::Connection& connection, net::BufferChain& input,
            std::chrono::steady_clock::time_point read_at, Decoded* decoded) override;
  const std::string& error() const noexcept override { return error_; }
  bool InRequest() const noexcept override {
    return in_request_.load(std::memory_order_acquire);
  }
  size_t HeldBytes() const noexcept override {
    return held_bytes_.load(std::memory_order_acquire);
  }
  void Reply(net::Connection& connection, ServerCall& call,
             const google::protobuf::Message& response) override;
  void SendError(net::Connection& connection, int64_t key, const CallError& error) override;
  bool CallCanceled(int64_t key) override;
  void WatchCancel(int64_t key, const std::shared_ptr<CancelState>& state) override;
  void OnServerStopping(net::Connection& connection) override;
  void OnClosed() override;
  void OnOutputDrained(net::Connection& connection) override;

  // Streaming calls (arenarpc/grpc_stream.h; server/grpc_server_stream.cc), by the call's key.
  // Canceled: RST_STREAM, connection closed, broken input. The connection's bytes that
  // StreamWaitRoom() counts are replies held for the client's windows plus bytes its socket has
  // not taken.
  bool IsStreamCall(int64_t key) override;
  bool StreamAcceptsGzip(int64_t key) override;
  size_t max_body_size() const noexcept override { return max_body_size_; }
  ServerState& state() const noexcept override { return state_; }
  int StreamRead(int64_t key, net::BufferChain* message, int* compress_type) override;
  int StreamWaitRoom(int64_t key, size_t max_stream_bytes, bool wait,
                     Clock::time_point until) override;
  int StreamSend(int64_t key, net::BufferChain&& message, bool compressed,
                 const std::map<std::string, std::string>* metadata) override;
  void AddStreamTrailer(int64_t key, std::string name, std::string value) override;
  // Wakes the call's waits (its controller's NotifyOnCancel fired).
  void WakeStream(int64_t key);
  // Shows the streaming call in the server's stream registry (the pages) while the entry lives;
  // its buffered bytes are kept current here, its messages are counted by the caller.
  stream::StreamRegistry::Entry RegisterStream(int64_t key, std::string_view method) override;

 private:
  // Reply()'s two halves. PackReply: false when the call failed (an error was packed instead).
  bool PackReply(ServerCall& call, const google::protobuf::Message& response,
                 net::BufferChain* out);
  void SendReply(net::Connection& connection, int64_t key, net::BufferChain&& reply);
  // A call between its admission and its reply.
  struct Call {
    bool accepts_gzip = false;
    bool canceled = false;  // the client reset the stream
    bool failed = false;    // PackReply produced an error, not a message
    bool compressed = false;
    bool json = false;      // Connect with JSON messages
    protocol::h2::GrpcStatus status = protocol::h2::GrpcStatus::kOk;
    std::string text;
    std::string details;  // grpc-status-details-bin of a failed call (Controller)
    std::vector<std::pair<std::string, std::string>> metadata;  // response headers
    std::weak_ptr<CancelState> cancel;
    std::shared_ptr<StreamWaits> stream;  // streaming calls only
  };

  // request_: a call for admission (*call), or answered here (health, bad path or encoding).
  Step Dispatch(net::Connection& connection, std::chrono::steady_clock::time_point read_at,
                DecodedCall* call);
  void AnswerHealth(net::Connection& connection, const protocol::h2::GrpcRequest& request);
  // An OPTIONS request: a CORS preflight's answer (ServerOptions::cors_*), or 403.
  void AnswerPreflight(net::Connection& connection, const protocol::h2::GrpcRequest& request);
  void Fail(net::Connection& connection, int64_t key, protocol::h2::GrpcStatus status,
            std::string_view text);
  // Canceled streams' calls, marked; their cancel states are returned to fire (mutex_ held).
  void MarkCanceled(std::vector<std::shared_ptr<CancelState>>* fire);
  void MarkCanceledLocked(Call& call);  // counted in canceled_calls_
  void EraseLocked(std::unordered_map<int64_t, Call>::iterator it);
  // Writes what the session has to send, in order, one thread at a time; closes the connection
  // once the session is done.
  void Flush(net::Connection& connection);
  void PublishLocked();  // mutex_ held: held_bytes_, in_request_
  // mutex_ held: the session's output into unsent_ while the connection holds less than
  // max_unwritten_bytes (else it asks to be told when it drained); wakes the writers whose
  // streams drained; runs the flow-control stall clock (write_timeout_ms).
  void TakeOutputLocked(net::Connection& connection);
  // mutex_ held: replies held for the client's windows + output not yet written.
  size_t HeldWithConnectionLocked(const net::Connection& connection) const;
  void WakeLocked(const std::vector<int32_t>& stream_ids);
  // mutex_ held: the call's buffered bytes (both ways) into its counters, when registered.
  void PublishBufferedLocked(int32_t stream_id, const StreamWaits& waits);

  ServerState& state_;
  const size_t max_body_size_;
  const size_t max_held_bytes_;  // max_unwritten_bytes: replies waiting for a window
  bool has_stream_methods_ = false;
  bool builtin_health_ = false;  // grpc.health.v1.Health is the built-in one, not the user's
  bool writers_wait_for_connection_ = false;  // mutex_: a writer met max_unwritten_bytes
  bool flush_posted_ = false;                 // mutex_: a Flush() is posted to the connection
  static constexpr size_t kStreamFlushBytes = 32u << 10;
  // Input handed to nghttp2 per turn of the connection's read loop (Next() yields past it), so
  // one connection's frames do not keep the others waiting.
  static constexpr size_t kInputPerTurn = 64u << 10;
  size_t input_this_turn_ = 0;     // Next() only
  uint64_t data_bytes_seen_ = 0;   // mutex_: session_.data_bytes_sent() at the last look
  std::string error_;  // Next() only
  // The request Next() decoded last (reading thread only): its call's CallHead points into it
  // until the next Next().
  protocol::h2::GrpcRequest request_;

  std::atomic<size_t> held_bytes_{0};
  std::atomic<bool> in_request_{false};
  std::mutex mutex_;
  protocol::h2::GrpcServerSession session_;
  std::unordered_map<int64_t, Call> calls_;
  // calls_ marked canceled (written under mutex_): CallCanceled()'s lock-free answer while 0.
  std::atomic<int> canceled_calls_{0};
  // calls_ of streaming calls (written under mutex_): IsStreamCall()'s lock-free "no" while 0.
  std::atomic<int> stream_calls_{0};
  net::BufferChain unsent_;  // session output for the writing thread
  bool writing_ = false;
  bool close_issued_ = false;
};

}  // namespace arenarpc::server
