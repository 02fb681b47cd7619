#pragma once
// Stream: one end of a streaming RPC (arenarpc/stream.h), and the process-wide table that maps
// StreamIds to streams.
//
// Life: created by StreamCreate (client, pending until its call's reply) or StreamAccept (server,
// pending until the reply is written); connected, it writes DATA frames to the peer's stream id
// and takes the peer's DATA/FEEDBACK/RST/CLOSE from its StreamHost; closed by StreamClose, CLOSE,
// RST, the connection going or an overrun. Received messages wait in an inbox consumed by one
// handler turn at a time (messages_in_batch per call), which then sends FEEDBACK with the total
// consumed bytes when the peer asked for it. Writes count produced bytes against the peer's
// feedback: StreamWrite is EAGAIN at max_buf_size unacknowledged bytes, EOVERCROWDED while the
// connection holds its max_unwritten_bytes unsent; StreamWait waits for both. A FEEDBACK that
// acknowledges more than was sent fails the stream (the peer lies; trusting it unbounds the
// writer). Closing a pending stream sends its held writes and then CLOSE once it connects.

#include <asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "arenarpc/fiber.h"
#include "arenarpc/stream.h"
#include "protocol/rpc_meta.pb.h"
#include "protocol/stream_frame.h"
#include "stream/stream_registry.h"

namespace arenarpc::stream {

class StreamHost;

class Stream : public std::enable_shared_from_this<Stream> {
 public:
  // A new stream in the table. `remote`: the peer's settings (server side), else null.
  static std::shared_ptr<Stream> Create(const StreamOptions& options,
                                        const protocol::StreamSettings* remote);
  static std::shared_ptr<Stream> Find(StreamId id);
  Stream(StreamId id, const StreamOptions& options, const protocol::StreamSettings* remote);
  ~Stream();

  StreamId id() const noexcept { return id_; }
  // This side's settings, for the meta of the call's request or reply.
  void FillSettings(protocol::StreamSettings* settings) const;
  // Binds to the connection's host. false: the host is closed or full.
  bool Bind(std::shared_ptr<StreamHost> host);
  // Client: binds a stream waiting for its call's reply to the host the reply came on.
  bool BindForReply(std::shared_ptr<StreamHost> host);
  bool bound_to(const StreamHost* host);
  // Server: shows the stream in its server's registry until it closes (pages: /status,
  // /connections). Its traffic is counted from then on.
  void Register(StreamRegistry::Entry entry);
  // Starts the data phase (server: the reply was written; client: the reply accepted it, with the
  // server's settings). Held writes go out now.
  void Connect(const protocol::StreamSettings* remote);
  bool connected();
  // Server: StreamAccept could not bind the stream. Removes it without calling its handler (brpc's
  // contract: a failed StreamAccept leaves the handler to the caller).
  void Discard();
  // Server: the call's "PRPC" reply frame as the DATA frame that carries it to the client's
  // stream (brpc sends an accepting reply that way).
  net::BufferChain WrapReply(net::BufferChain&& rpc_frame);

  int Write(const net::BufferChain& message);
  int Wait(std::chrono::steady_clock::time_point deadline);
  // Ends the stream. code != 0: on_failed(code, text) before on_closed. send_close: tell the peer.
  void Terminate(int code, const std::string& text, bool send_close);
  void OnFrame(protocol::StreamFrame&& frame);  // from the host (the connection's thread)

 private:
  enum class State { kPending, kConnected, kClosed };
  void ScheduleTurnLocked();  // mutex_ held
  void RunTurns();            // the handler turns, until nothing is left
  void SendFeedback(uint64_t consumed);
  void FailByPeer(const std::string& text);  // RST to the peer, then on_failed(EPROTO)
  size_t MaxHeldBytes() const;              // writes held before connecting, at most
  void ArmIdleTimerLocked();
  void OnIdleTimer();
  net::BufferChain DataFrame(net::BufferChain&& message) const;  // mutex_ held (remote_)
  // mutex_ held: written and not acknowledged by the peer's FEEDBACK (held writes without it).
  uint64_t UnackedLocked() const;
  void PublishUnackedLocked() {
    if (counters_ != nullptr) counters_->SetBufferedOut(UnackedLocked());
  }
  // Frames go to the connection outside mutex_: a write may close the connection on the calling
  // thread, and the close terminates this stream.

  const StreamId id_;
  const StreamOptions options_;
  std::mutex write_mutex_;  // orders this stream's frames; never taken under mutex_
  std::mutex mutex_;
  State state_ = State::kPending;
  bool awaiting_reply_ = false;  // client: the call went out, its reply may bind us
  std::shared_ptr<StreamHost> host_;
  protocol::StreamSettings remote_;
  bool has_remote_ = false;
  // writer
  uint64_t produced_ = 0, remote_consumed_ = 0;
  std::deque<net::BufferChain> held_;  // written before connecting
  uint64_t held_bytes_ = 0;
  bool close_when_connected_ = false;  // StreamClose() while pending: CLOSE follows the held writes
  fiber::ConditionVariable writable_;
  // reader
  net::BufferChain partial_;  // DATA with has_continuation, not complete yet
  std::deque<net::BufferChain> inbox_;
  size_t inbox_bytes_ = 0;  // payload (the peer's window counts it; FEEDBACK reports it)
  // What a queued message costs beyond its payload, charged to the connection's
  // max_stream_unconsumed_bytes (not to the window): a peer sending empty messages, which no
  // window counts, is so bounded too.
  static constexpr size_t kQueuedMessageOverhead = sizeof(net::BufferChain) + 16;
  uint64_t consumed_ = 0;
  bool turn_scheduled_ = false;
  bool idle_event_ = false;
  bool finished_ = false;  // on_closed delivered
  int fail_code_ = 0;
  std::string fail_text_;
  std::chrono::steady_clock::time_point last_message_at_;
  std::unique_ptr<asio::steady_timer> idle_timer_;
  // Shown on the pages (server streams): the registry's entry, and its counters (set once under
  // mutex_, alive as the entry is; null when not registered).
  StreamRegistry::Entry entry_;
  StreamCounters* counters_ = nullptr;
};

// The call paths' hooks (client_call.cc, baidu_std_server_protocol.cc).
// Client: the offered stream's settings into the request meta.
void AddRequestSettings(Controller& cntl, protocol::RpcMeta* meta);
// Client: a reply that accepted the stream connects it (the controller tells success). false: the
// call offered a stream and succeeded, but the server did not accept it (the call fails, as
// brpc's: EREQUEST "The server didn't accept the stream").
bool OnClientReply(Controller& cntl, const protocol::RpcMeta& meta);
// Client: the call completed; a stream it did not connect fails with the call's error.
void OnClientCallEnd(Controller& cntl);
// Server: the request offered a stream on `host`'s connection.
// `method`: the call's method's full name (lives as the call does).
void OfferStream(Controller& cntl, const protocol::StreamSettings& remote,
                 std::shared_ptr<StreamHost> host, std::string_view method);
// Server: the stream the handler accepted, or null.
std::shared_ptr<Stream> AcceptedStream(Controller& cntl);

}  // namespace arenarpc::stream
