#pragma once
// ClientSession: one connection's protocol state (client/client_protocol.h) — writes the packed
// requests the connection admitted, decodes what is read and routes each reply to its attempt
// through the ClientSessionHost (the connection). Loop thread only; no sockets of its own, so a
// session can be driven by a fake host in tests.

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "arenarpc/buffer_chain.h"
#include "client/client_protocol.h"

namespace asio {
class io_context;
}

namespace arenarpc::net {
class Connection;
}

namespace arenarpc::client {

// What a session may ask of its connection.
class ClientSessionHost {
 public:
  // The socket is connected (it may still be handshaking TLS) and not closed yet.
  virtual bool connected() const noexcept = 0;
  // Bytes handed to the socket that the kernel has not accepted yet (stream frames included).
  virtual uint64_t socket_unsent_bytes() const noexcept = 0;
  // The connected socket, for streams that write to it themselves; null when not connected.
  virtual const std::shared_ptr<net::Connection>& socket() const noexcept = 0;
  virtual asio::io_context& loop() noexcept = 0;
  virtual bool closed() const noexcept = 0;
  virtual bool exclusive() const noexcept = 0;
  virtual const std::string& remote_side() const noexcept = 0;
  // Why the connection closed (or would have): the code and text its calls fail with.
  virtual int close_code() const noexcept = 0;
  virtual std::string close_text() const = 0;

  // Writes one attempt's request, noting where it ends in the written stream (sent once the
  // kernel took that far). false: the attempt was abandoned meanwhile; nothing is written.
  virtual bool WriteRequest(int64_t correlation_id, net::BufferChain&& bytes) = 0;
  // Writes protocol bytes; the requests of `started` end within them.
  virtual void WriteOutput(net::BufferChain&& bytes, std::span<const int64_t> started) = 0;
  // The attempt is still waiting for its reply.
  virtual bool Awaits(int64_t correlation_id) const noexcept = 0;
  // The server's reply to an attempt: it completes there (dropped and counted if none waits).
  virtual void Complete(int64_t correlation_id, ClientReply& reply) = 0;
  // An attempt failed on the way; request_sent: it may have run (never retried then).
  virtual void FailAttempt(int64_t correlation_id, int code, const std::string& text,
                           bool request_sent) = 0;
  // An exclusive connection whose last call or stream ended goes back to its pool.
  virtual void ReleaseIfIdle() = 0;
  // A reply was read: timeouts no longer count as "in a row".
  virtual void OnReplyRead() noexcept = 0;
  // (Re)arms the watchdog: every 1 ms when `fast` (requests wait for the socket's window).
  virtual void ArmWatchdog(bool fast) = 0;
  virtual bool watchdog_armed() const noexcept = 0;
  // The reason the connection is closing, set before OnInput() returns false.
  virtual void SetCloseReason(int code, std::string text) = 0;
  // Closes the socket now with this reason (its calls fail with it).
  virtual void CloseSocket(int code, std::string text) = 0;
  // Handed out no more (a GOAWAY'd session), closed once it has nothing left.
  virtual void Retire() noexcept = 0;

 protected:
  ~ClientSessionHost() = default;
};

class ClientSession {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~ClientSession() = default;

  // The socket is up (TLS may still be handshaking): writes what waited for it.
  virtual void OnConnected() = 0;
  // Bytes of `request` counted against max_unwritten_bytes.
  virtual size_t RequestBytes(const PackedRequest& request) const noexcept = 0;
  // One attempt the connection admitted (and now awaits): writes it, or queues it.
  virtual void Submit(int64_t correlation_id, PackedRequest&& request) = 0;
  // The connection forgot an attempt it awaited (timeout, cancel, a backup's loser).
  virtual void Abandon(int64_t correlation_id) = 0;
  // Decodes `input` (what it leaves is kept for the next read). false: close the connection (the
  // reason is set on the host).
  virtual bool OnInput(net::BufferChain& input) = 0;
  // The watchdog's turn: hands queued requests to the socket as its window allows.
  virtual void Pump() = 0;
  // The connection closed: what the session holds fails with `code`/`text`.
  virtual void OnClosed(int code, const std::string& text) = 0;

  // Request bytes held here, not yet handed to the socket (beside the socket's own unsent bytes).
  virtual uint64_t unsent_request_bytes() const noexcept = 0;
  // Requests wait for the socket's window (the watchdog looks every 1 ms meanwhile).
  virtual bool requests_waiting() const noexcept = 0;
  // Since when an incomplete reply is buffered ({} = none): read_timeout_ms counts from it.
  virtual Clock::time_point partial_reply_since() const noexcept = 0;
  // Streams still open besides the awaited attempts (an exclusive connection is busy meanwhile).
  virtual size_t open_streams() const noexcept = 0;
};

}  // namespace arenarpc::client
