#pragma once
// ClientConnection: one TCP connection of a channel, whatever its protocol. Connects (with the
// connect timeout), then runs on a net::Connection; keeps the calls sent on it by correlation id.
// What depends on the wire is its ClientSession (client/client_session.h): it writes the packed
// requests and decodes the replies, which come back here to their calls. All of its state lives
// on its loop thread: the public methods post there.
//
// A request counts as sent once the kernel accepted its last byte (net::Connection::
// bytes_written()). When the connection breaks, unsent calls get a retryable failure, sent calls
// fail for good: a request that may have run is never sent twice.
//
// Bounds: unsent bytes (held by the session + the socket's) are capped by max_unwritten_bytes
// (EOVERCROWDED). A
// watchdog closes the connection as stuck when a reply frame stays incomplete for read_timeout_ms,
// queued bytes do not move for write_timeout_ms, or max_consecutive_timeouts calls in a row time
// out with nothing read in between.

#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "arenarpc/buffer_chain.h"
#include "client/client_protocol.h"
#include "client/client_session.h"
#include "net/connection.h"

namespace arenarpc::client {

class ChannelCore;
class ClientCall;
class SubChannel;

class ClientConnection final : public std::enable_shared_from_this<ClientConnection>,
                               private ClientSessionHost {
 public:
  // exclusive: at most one call at a time (pooled/short); its timeout closes the connection.
  // Starts connecting at once.
  static std::shared_ptr<ClientConnection> Create(ChannelCore* core,
                                                  std::shared_ptr<SubChannel> server,
                                                  asio::io_context& loop, bool exclusive);
  ~ClientConnection();
  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  // Any thread: queue one attempt's request, packed by the channel's protocol. Never calls back
  // into `call` before returning.
  void Submit(std::shared_ptr<ClientCall> call, int64_t correlation_id, PackedRequest&& request);
  // Any thread: runs `work(session)` on the loop thread (protocol-specific requests, e.g. a gRPC
  // stream's: client/grpc_client_protocol.h).
  template <class Work>
  void RunInSession(Work work) {
    asio::post(loop_, [self = shared_from_this(), work = std::move(work)]() mutable {
      work(*self->session_);
    });
  }
  // Any thread: the call with this id (started at `call_start`) ended without a reply at `ended`
  // (timed_out: its deadline passed; else cancelled or a backup's loser). Forgets it, and drops its
  // request if still unsent; an exclusive connection is closed instead (its late reply must not
  // be read as the next call's).
  void Abandon(int64_t correlation_id, bool timed_out,
               std::chrono::steady_clock::time_point call_start,
               std::chrono::steady_clock::time_point ended);
  // Any thread: close; pending calls fail with `code`/`text`. Idempotent.
  void Close(int code, std::string text);

  bool closed() const noexcept override { return closed_.load(std::memory_order_acquire); }
  // Being closed as stuck: hand it out no more (the close itself follows on its loop).
  bool retiring() const noexcept { return retiring_.load(std::memory_order_acquire); }
  bool exclusive() const noexcept override { return exclusive_; }

 private:
  class Delegate;
  using Clock = std::chrono::steady_clock;
  struct Pending {
    std::shared_ptr<ClientCall> call;
    uint64_t end_offset = 0;  // position of the request's last byte in the written stream
    bool queued = false;      // handed to net::Connection (else waiting in the session)
  };

  ClientConnection(ChannelCore* core, std::shared_ptr<SubChannel> server, asio::io_context& loop,
                   bool exclusive);
  void StartConnect();
  void OnConnected(const asio::error_code& error);
  void DoSubmit(std::shared_ptr<ClientCall> call, int64_t correlation_id, PackedRequest&& request);
  // Checks a new attempt against the closed state and max_unwritten_bytes and registers it;
  // nullptr: the call was told why not.
  Pending* Admit(const std::shared_ptr<ClientCall>& call, int64_t correlation_id, size_t bytes);
  // Bytes of requests not yet accepted by the kernel (held by the session or in the socket).
  uint64_t UnsentBytes() const noexcept;
  // Checks the connection at a quarter of the shortest of read/write_timeout_ms (at most 1 s), or in
  // 1 ms when `fast` (requests wait for the socket's window).
  void ArmWatchdog(bool fast) override;
  void OnWatchdog();
  // Closes the connection as stuck: pending calls fail (EFAILEDSOCKET; unsent ones may retry) and a
  // cluster's server leaves rotation until its health check passes.
  void CloseStuck(const std::string& why);
  bool OnInput(net::BufferChain& input);
  void OnSocketClosed(net::Connection& connection);
  // Marks the connection closed and fails every pending call (loop thread).
  void FailAll(int code, const std::string& text, uint64_t bytes_written);

  // ClientSessionHost (client/client_session.h), loop thread.
  bool connected() const noexcept override { return connection_ != nullptr; }
  uint64_t socket_unsent_bytes() const noexcept override;
  const std::shared_ptr<net::Connection>& socket() const noexcept override { return connection_; }
  asio::io_context& loop() noexcept override { return loop_; }
  const std::string& remote_side() const noexcept override;
  int close_code() const noexcept override;
  std::string close_text() const override;
  bool WriteRequest(int64_t correlation_id, net::BufferChain&& bytes) override;
  void WriteOutput(net::BufferChain&& bytes, std::span<const int64_t> started) override;
  bool Awaits(int64_t correlation_id) const noexcept override;
  void Complete(int64_t correlation_id, ClientReply& reply) override;
  void FailAttempt(int64_t correlation_id, int code, const std::string& text,
                   bool request_sent) override;
  void ReleaseIfIdle() override;
  void OnReplyRead() noexcept override;
  bool watchdog_armed() const noexcept override { return watchdog_armed_; }
  void SetCloseReason(int code, std::string text) override;
  void CloseSocket(int code, std::string text) override;
  void Retire() noexcept override { retiring_.store(true, std::memory_order_release); }
  // Removes the attempt's entry: its call, or null (the reply is counted as dropped).
  std::shared_ptr<ClientCall> TakeCall(int64_t correlation_id);

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
  std::unique_ptr<ClientSession> session_;  // the channel's protocol on this connection
  std::unordered_map<int64_t, Pending> pending_;
  asio::steady_timer watchdog_;
  bool watchdog_armed_ = false;
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
