#pragma once
// ClientConnection: one TCP connection of a channel (baidu_std frames, or with protocol "grpc"
// one HTTP/2 session whose streams are the calls: protocol/h2/grpc_client_session.h). Connects
// (with the connect timeout), then runs on a net::Connection; keeps the calls sent on it by
// correlation id and hands replies to them. All of its state lives on its loop thread: the public
// methods post there. A gRPC call counts as sent once its HEADERS reached the kernel.
//
// A request counts as sent once the kernel accepted its last byte (net::Connection::
// bytes_written()). When the connection breaks, unsent calls get a retryable failure, sent calls
// fail for good: a request that may have run is never sent twice.
//
// Bounds: requests wait in this connection's own queue while the socket has more than
// kHandOffWindow unwritten, so a request whose call timed out or was cancelled meanwhile is dropped
// unsent; unsent bytes (queue + socket) are capped by max_unwritten_bytes (EOVERCROWDED). A
// watchdog closes the connection as stuck when a reply frame stays incomplete for read_timeout_ms,
// queued bytes do not move for write_timeout_ms, or max_consecutive_timeouts calls in a row time
// out with nothing read in between.

#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "arenarpc/buffer_chain.h"
#include "net/connection.h"
#include "protocol/frame_codec.h"
#include "protocol/h2/grpc_client_session.h"
#include "protocol/stream_frame.h"
#include "stream/stream_host.h"

namespace arenarpc::client {

class ChannelCore;
class ClientCall;
class GrpcStreamCall;
class SubChannel;

class ClientConnection : public std::enable_shared_from_this<ClientConnection> {
 public:
  // exclusive: at most one call at a time (pooled/short); its timeout closes the connection.
  // Starts connecting at once.
  static std::shared_ptr<ClientConnection> Create(ChannelCore* core,
                                                  std::shared_ptr<SubChannel> server,
                                                  asio::io_context& loop, bool exclusive);
  ~ClientConnection();
  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  // Any thread: queue one attempt's frame. Never calls back into `call` before returning.
  void Submit(std::shared_ptr<ClientCall> call, int64_t correlation_id, net::BufferChain frame);
  // Any thread: queue one attempt of a gRPC call (protocol "grpc": the connection speaks HTTP/2;
  // calls are streams of one protocol::h2::GrpcClientSession, see docs/grpc.md).
  void SubmitGrpc(std::shared_ptr<ClientCall> call, int64_t correlation_id,
                  protocol::h2::GrpcClientRequest request);
  // Any thread: a gRPC streaming call (client/grpc_stream_call.h) under `tag` (a correlation id):
  // open it, queue one request message, end its request side, give back `bytes` of its response
  // messages the caller has read (its window reopens once all are), cancel it (RST_STREAM).
  void OpenGrpcStream(std::shared_ptr<GrpcStreamCall> call, int64_t tag,
                      protocol::h2::GrpcClientRequest request);
  void SendGrpcStream(int64_t tag, net::BufferChain message, bool gzip);
  void CloseGrpcStreamSend(int64_t tag);
  void ReleaseGrpcStream(int64_t tag, size_t bytes);
  void CancelGrpcStream(int64_t tag);
  // Any thread: the call with this id (started at `call_start`) ended without a reply at `ended`
  // (timed_out: its deadline passed; else cancelled or a backup's loser). Forgets it, and drops its
  // request if still unsent; an exclusive connection is closed instead (its late reply must not
  // be read as the next call's).
  void Abandon(int64_t correlation_id, bool timed_out,
               std::chrono::steady_clock::time_point call_start,
               std::chrono::steady_clock::time_point ended);
  // Any thread: close; pending calls fail with `code`/`text`. Idempotent.
  void Close(int code, std::string text);

  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
  // Being closed as stuck: hand it out no more (the close itself follows on its loop).
  bool retiring() const noexcept { return retiring_.load(std::memory_order_acquire); }
  bool exclusive() const noexcept { return exclusive_; }

 private:
  // Requests are handed to the socket while it holds at most this much unwritten.
  static constexpr uint64_t kHandOffWindow = 256u << 10;

  class Delegate;
  using Clock = std::chrono::steady_clock;
  struct Pending {
    std::shared_ptr<ClientCall> call;
    uint64_t end_offset = 0;  // position of the frame's last byte in the written stream
    bool queued = false;      // handed to net::Connection (else waiting for the connect)
  };

  ClientConnection(ChannelCore* core, std::shared_ptr<SubChannel> server, asio::io_context& loop,
                   bool exclusive);
  void StartConnect();
  void OnConnected(const asio::error_code& error);
  void DoSubmit(std::shared_ptr<ClientCall> call, int64_t correlation_id, net::BufferChain frame);
  // Checks a new attempt against the closed state and max_unwritten_bytes and registers it;
  // nullptr: the call was told why not.
  Pending* Admit(const std::shared_ptr<ClientCall>& call, int64_t correlation_id, size_t bytes);
  // gRPC: writes what the session has to send, hands finished calls to their ClientCall, and
  // closes the connection once a GOAWAY'd session has nothing left.
  void FlushGrpc();
  bool OnGrpcInput(net::BufferChain& input);
  void WriteFrame(int64_t correlation_id, net::BufferChain frame);
  // Hands queued requests to the socket while its window allows; skips abandoned ones.
  void DrainWaiting();
  // Bytes of requests not yet accepted by the kernel (queued here or in the socket).
  uint64_t UnsentBytes() const noexcept;
  // Checks the connection at a quarter of the shortest of read/write_timeout_ms (at most 1 s), or in
  // 1 ms when `fast` (requests wait for the socket's window).
  void ArmWatchdog(bool fast);
  void OnWatchdog();
  // Closes the connection as stuck: pending calls fail (EFAILEDSOCKET; unsent ones may retry) and a
  // cluster's server leaves rotation until its health check passes.
  void CloseStuck(const std::string& why);
  bool OnInput(net::BufferChain& input);
  void HandleFrame(protocol::Frame& frame, bool attachment_error);
  // A "STRM" frame: to the streams bound here, or the wrapped reply that binds one. false: close.
  bool HandleStreamFrame(protocol::StreamFrame& frame);
  void OnSocketClosed(net::Connection& connection);
  // Marks the connection closed and fails every pending call (loop thread).
  void FailAll(int code, const std::string& text, uint64_t bytes_written);

  ChannelCore* const core_;
  const std::shared_ptr<SubChannel> server_;
  asio::io_context& loop_;
  const bool exclusive_;
  std::atomic<bool> closed_{false};
  // Loop thread only:
  asio::ip::tcp::socket connecting_socket_;
  asio::steady_timer connect_timer_;
  bool connect_timed_out_ = false;
  std::shared_ptr<net::Connection> connection_;
  protocol::FrameDecoder decoder_;
  protocol::StreamFrameDecoder stream_decoder_;
  std::unique_ptr<protocol::h2::GrpcClientSession> grpc_;  // protocol "grpc" only
  std::shared_ptr<stream::StreamHost> stream_host_;  // streams on this connection (docs/streaming.md)
  std::unordered_map<int64_t, Pending> pending_;
  struct GrpcStreamEntry {
    std::shared_ptr<GrpcStreamCall> call;
    uint64_t sent = 0;  // request bytes handed to the session (prefixes included)
  };
  std::unordered_map<int64_t, GrpcStreamEntry> grpc_streams_;
  // Frames not handed to the socket yet (connecting, or its window is full), in call order.
  std::deque<std::pair<int64_t, net::BufferChain>> waiting_;
  uint64_t waiting_bytes_ = 0;
  asio::steady_timer watchdog_;
  bool watchdog_armed_ = false;
  Clock::time_point partial_since_{};   // an incomplete reply frame is buffered since; {} = none
  uint64_t last_written_ = 0;           // bytes_written() at the watchdog's last look
  Clock::time_point write_progress_at_{};  // when unsent bytes last moved; {} = none unsent
  // Any thread: counts one timed-out call (started at call_start, timed out at `ended`); true
  // when it makes max_consecutive_timeouts in a row (the caller then closes the connection).
  bool CountTimeout(Clock::time_point call_start, Clock::time_point ended);
  // Timeouts in a row with nothing read in between (reset by OnInput). Calls in flight together
  // that time out together count once: only a call started after the last counted timeout
  // happened counts.
  std::atomic<int> timeouts_in_a_row_{0};
  std::atomic<int64_t> last_counted_timeout_ns_{0};  // steady clock
  std::atomic<bool> retiring_{false};
  int close_code_ = 0;         // set when we close on purpose (framing error, Close())
  std::string close_text_;
};

}  // namespace arenarpc::client
