#include "client/client_connection.h"

#include <asio/post.hpp>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "arenarpc/error_codes.h"
#include "client/channel_core.h"
#include "client/client_call.h"
#include "client/connection_manager.h"
#include "client/grpc_stream_call.h"
#include "client/sub_channel.h"
#include "net/tls_session.h"

namespace arenarpc::client {

// Adapts net::Connection's callbacks; holds the ClientConnection alive while the socket lives.
class ClientConnection::Delegate final : public net::Connection::Delegate {
 public:
  explicit Delegate(std::shared_ptr<ClientConnection> owner) : owner_(std::move(owner)) {}
  net::Connection::InputResult OnInput(net::Connection&, net::BufferChain& input,
                                       net::Connection::Clock::time_point) override {
    net::Connection::InputResult result;
    result.keep_open = owner_->OnInput(input);
    return result;
  }
  void OnClosed(net::Connection& connection) override { owner_->OnSocketClosed(connection); }

 private:
  std::shared_ptr<ClientConnection> owner_;
};

std::shared_ptr<ClientConnection> ClientConnection::Create(ChannelCore* core,
                                                           std::shared_ptr<SubChannel> server,
                                                           asio::io_context& loop,
                                                           bool exclusive) {
  std::shared_ptr<ClientConnection> connection(
      new ClientConnection(core, std::move(server), loop, exclusive));
  asio::post(loop, [connection] { connection->StartConnect(); });
  return connection;
}

ClientConnection::ClientConnection(ChannelCore* core, std::shared_ptr<SubChannel> server,
                                   asio::io_context& loop, bool exclusive)
    : core_(core),
      server_(std::move(server)),
      loop_(loop),
      exclusive_(exclusive),
      connecting_socket_(loop),
      connect_timer_(loop),
      decoder_(core->options().max_body_size),
      stream_decoder_(core->options().max_body_size),
      watchdog_(loop) {
  const ChannelOptions& options = core->options();
  if (core->grpc()) {
    protocol::h2::GrpcClientSession::Limits limits;
    limits.max_concurrent_streams = options.grpc_max_concurrent_streams;
    limits.max_header_list_bytes = options.grpc_max_header_list_bytes;
    limits.max_message_bytes = options.max_body_size;
    limits.response_bytes_budget = options.max_body_size;
    limits.stream_window = options.grpc_stream_window;
    grpc_ = std::make_unique<protocol::h2::GrpcClientSession>(limits);
  }
}

ClientConnection::~ClientConnection() = default;

void ClientConnection::StartConnect() {
  if (closed()) return;  // Close() ran first
  const int64_t timeout_ms = core_->options().connect_timeout_ms;
  if (timeout_ms > 0) {
    connect_timer_.expires_after(std::chrono::milliseconds(timeout_ms));
    connect_timer_.async_wait([self = shared_from_this()](const asio::error_code& error) {
      if (error || self->connection_ || self->closed()) return;
      self->connect_timed_out_ = true;
      asio::error_code ignored;
      self->connecting_socket_.close(ignored);  // OnConnected sees operation_aborted
    });
  }
  connecting_socket_.async_connect(server_->endpoint(),
                                   [self = shared_from_this()](const asio::error_code& error) {
                                     self->OnConnected(error);
                                   });
}

void ClientConnection::OnConnected(const asio::error_code& error) {
  connect_timer_.cancel();
  if (closed()) return;  // Close() failed the calls already
  if (error) {
    core_->counters().connections_failed.fetch_add(1, std::memory_order_relaxed);
    server_->OnConnectionFailed();  // before the calls retry: they then avoid this server
    const std::string where = "Fail to connect " + server_->remote_side() + ": ";
    if (connect_timed_out_) {
      FailAll(ETIMEDOUT,
              where + "timeout=" + std::to_string(core_->options().connect_timeout_ms) + "ms", 0);
    } else {
      const int code = error.category() == asio::system_category() ? error.value() : EFAILEDSOCKET;
      FailAll(code, where + error.message(), 0);
    }
    return;
  }
  core_->counters().connections_opened.fetch_add(1, std::memory_order_relaxed);
  connection_ = net::Connection::Create(std::move(connecting_socket_),
                                        std::make_unique<Delegate>(shared_from_this()), {});
  if (net::TlsContext* tls = core_->tls()) {
    std::string error;
    std::unique_ptr<net::TlsSession> session =
        tls->NewSession(core_->TlsServerName(server_->endpoint()), &error);
    if (!session) {
      FailAll(EFAILEDSOCKET, "TLS to " + server_->remote_side() + ": " + error, 0);
      return;
    }
    session->StartHandshake();
    connection_->StartTls(std::move(session));  // requests wait for the handshake
  }
  connection_->Start();
  if (grpc_) FlushGrpc();  // the preface, SETTINGS and the calls that waited for the connect
  DrainWaiting();
  if (!closed()) ArmWatchdog(!waiting_.empty());
}

void ClientConnection::Submit(std::shared_ptr<ClientCall> call, int64_t correlation_id,
                              net::BufferChain frame) {
  asio::post(loop_, [self = shared_from_this(), call = std::move(call), correlation_id,
                     frame = std::move(frame)]() mutable {
    self->DoSubmit(std::move(call), correlation_id, std::move(frame));
  });
}

void ClientConnection::SubmitGrpc(std::shared_ptr<ClientCall> call, int64_t correlation_id,
                                  protocol::h2::GrpcClientRequest request) {
  asio::post(loop_, [self = shared_from_this(), call = std::move(call), correlation_id,
                     request = std::move(request)]() mutable {
    Pending* pending = self->Admit(call, correlation_id, request.message.size());
    if (pending == nullptr) return;
    pending->call = std::move(call);
    self->grpc_->Start(correlation_id, std::move(request));
    self->FlushGrpc();
    if (!self->watchdog_armed_ && !self->closed()) self->ArmWatchdog(/*fast=*/false);
  });
}

void ClientConnection::OpenGrpcStream(std::shared_ptr<GrpcStreamCall> call, int64_t tag,
                                      protocol::h2::GrpcClientRequest request) {
  asio::post(loop_, [self = shared_from_this(), call = std::move(call), tag,
                     request = std::move(request)]() mutable {
    if (self->closed()) {
      call->OnFailed(self->close_code_ != 0 ? self->close_code_ : EFAILEDSOCKET,
                     self->close_text_.empty()
                         ? "Connection to " + self->server_->remote_side() + " closed"
                         : self->close_text_);
      return;
    }
    if (!self->grpc_streams_.try_emplace(tag, GrpcStreamEntry{std::move(call), 0}).second) {
      return;  // needs 2^32 calls between two still in flight
    }
    self->grpc_->Start(tag, std::move(request));
    self->FlushGrpc();
  });
}

void ClientConnection::SendGrpcStream(int64_t tag, net::BufferChain message, bool gzip) {
  asio::post(loop_, [self = shared_from_this(), tag, message = std::move(message), gzip]() mutable {
    auto it = self->grpc_streams_.find(tag);
    if (it == self->grpc_streams_.end() || self->closed()) return;
    const size_t bytes = protocol::h2::kMessagePrefixSize + message.size();
    if (self->grpc_->Send(tag, std::move(message), gzip)) it->second.sent += bytes;
    self->FlushGrpc();
  });
}

void ClientConnection::CloseGrpcStreamSend(int64_t tag) {
  asio::post(loop_, [self = shared_from_this(), tag] {
    if (self->closed() || !self->grpc_streams_.contains(tag)) return;
    self->grpc_->CloseSend(tag);
    self->FlushGrpc();
  });
}

void ClientConnection::ReleaseGrpcStream(int64_t tag, size_t bytes) {
  asio::post(loop_, [self = shared_from_this(), tag, bytes] {
    if (self->closed() || !self->grpc_streams_.contains(tag)) return;
    self->grpc_->Release(tag, bytes);
    self->FlushGrpc();  // the WINDOW_UPDATE
  });
}

void ClientConnection::CancelGrpcStream(int64_t tag) {
  asio::post(loop_, [self = shared_from_this(), tag] {
    if (self->closed() || self->grpc_streams_.erase(tag) == 0) return;
    self->grpc_->Cancel(tag);  // RST_STREAM CANCEL, or dropped while it waits for a stream
    self->FlushGrpc();
    if (self->exclusive_ && !self->closed() && self->connection_) {  // as Abandon() does
      self->close_code_ = EFAILEDSOCKET;
      self->close_text_ = "Connection closed after its gRPC stream was canceled";
      self->connection_->Close();
    }
  });
}

void ClientConnection::FlushGrpc() {
  if (grpc_->goaway_received()) {  // before the refused calls retry: they need a new connection
    retiring_.store(true, std::memory_order_release);
  }
  if (connection_ && !closed()) {
    net::BufferChain out;
    grpc_->TakeOutput(&out);
    // Only this thread writes to a gRPC connection (no "STRM" streams on it): exact.
    const uint64_t end = connection_->bytes_queued() + out.size();
    for (int64_t id : grpc_->TakeStarted()) {  // their HEADERS are in `out`: sent with its end
      auto it = pending_.find(id);
      if (it != pending_.end()) it->second.end_offset = end, it->second.queued = true;
    }
    for (int64_t tag : grpc_->TakeDrained()) {
      auto it = grpc_streams_.find(tag);
      if (it != grpc_streams_.end()) it->second.call->OnTaken(it->second.sent - grpc_->unsent_bytes(tag));
    }
    if (!out.empty()) {
      const std::shared_ptr<net::Connection> connection = connection_;
      connection->Write(std::move(out));  // may close (FailAll) right here
    }
  }
  protocol::h2::GrpcStreamMessage message;
  while (!closed() && grpc_->PopMessage(&message)) {
    auto it = grpc_streams_.find(message.tag);
    if (it != grpc_streams_.end()) it->second.call->OnMessage(std::move(message));
  }
  protocol::h2::GrpcClientResponse response;
  while (!closed() && grpc_->PopResponse(&response)) {
    if (auto stream = grpc_streams_.find(response.tag); stream != grpc_streams_.end()) {
      std::shared_ptr<GrpcStreamCall> call = std::move(stream->second.call);
      grpc_streams_.erase(stream);
      // Back to the pool before the caller hears of the end, so that its next call finds it.
      if (exclusive_ && pending_.empty() && grpc_streams_.empty() && !closed()) {
        server_->connections().OnExclusiveCallDone(shared_from_this());
      }
      call->OnEnd(response);
      continue;
    }
    auto it = pending_.find(response.tag);
    if (it == pending_.end()) {
      core_->counters().dropped_responses.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    std::shared_ptr<ClientCall> call = std::move(it->second.call);
    pending_.erase(it);
    if (response.unprocessed) {  // never reached the server: may go again, elsewhere
      call->OnAttemptFailed(response.tag, response.error_code, response.error_text, false);
      continue;
    }
    if (exclusive_ && pending_.empty() && grpc_streams_.empty() && !closed()) {
      server_->connections().OnExclusiveCallDone(shared_from_this());
    }
    if (response.error_code == EFAILEDSOCKET) {  // the stream broke after the request went
      call->OnAttemptFailed(response.tag, response.error_code, response.error_text, true);
    } else {
      call->OnGrpcReply(response.tag, response);
    }
  }
  if (closed() || !connection_) return;
  if (grpc_->failed()) {
    close_code_ = EINVAL;
    close_text_ = "Bad HTTP/2 from " + server_->remote_side() + ": " + grpc_->error();
    connection_->Close();
  } else if (grpc_->goaway_received() && grpc_->Idle()) {
    close_code_ = EFAILEDSOCKET;
    close_text_ = "Connection to " + server_->remote_side() + " closed after GOAWAY";
    connection_->Close();
  }
}

bool ClientConnection::OnGrpcInput(net::BufferChain& input) {
  const bool ok = grpc_->Receive(input);
  input.clear();
  if (timeouts_in_a_row_.load(std::memory_order_relaxed) != 0) {
    timeouts_in_a_row_.store(0, std::memory_order_relaxed);
  }
  FlushGrpc();  // on a bad input: the GOAWAY goes out, then the connection closes
  return ok || closed();
}

ClientConnection::Pending* ClientConnection::Admit(const std::shared_ptr<ClientCall>& call,
                                                  int64_t correlation_id, size_t bytes) {
  if (closed()) {  // lost a race with a failure: retryable, nothing was sent
    call->OnAttemptFailed(correlation_id, close_code_ != 0 ? close_code_ : EFAILEDSOCKET,
                          close_text_.empty() ? "Connection to " + server_->remote_side() + " closed"
                                              : close_text_,
                          false);
    return nullptr;
  }
  const uint64_t unsent = UnsentBytes() + (grpc_ ? grpc_->unsent_request_bytes() : 0);
  const size_t max_unwritten = core_->options().max_unwritten_bytes;
  if (unsent > 0 && unsent + bytes > max_unwritten) {
    call->OnAttemptFailed(correlation_id, EOVERCROWDED,
                          "Unsent requests to " + server_->remote_side() + " reached " +
                              std::to_string(unsent) + " bytes (max_unwritten_bytes=" +
                              std::to_string(max_unwritten) + ")",
                          false);
    return nullptr;
  }
  auto [it, inserted] = pending_.try_emplace(correlation_id);
  if (!inserted) {  // needs 2^32 calls between two attempts still in flight
    call->OnAttemptFailed(correlation_id, EINTERNAL, "correlation_id collision", false);
    return nullptr;
  }
  return &it->second;
}

void ClientConnection::DoSubmit(std::shared_ptr<ClientCall> call, int64_t correlation_id,
                                net::BufferChain frame) {
  Pending* pending = Admit(call, correlation_id, frame.size());
  if (pending == nullptr) return;
  const uint64_t unsent = UnsentBytes();
  pending->call = std::move(call);
  if (!connection_ || !waiting_.empty() || unsent - waiting_bytes_ > kHandOffWindow) {
    waiting_bytes_ += frame.size();
    waiting_.emplace_back(correlation_id, std::move(frame));
    if (connection_) ArmWatchdog(/*fast=*/true);
    return;
  }
  WriteFrame(correlation_id, std::move(frame));
  if (!watchdog_armed_ && !closed()) ArmWatchdog(/*fast=*/false);
}

uint64_t ClientConnection::UnsentBytes() const noexcept {
  // Stream frames count too: they share the connection's output.
  return waiting_bytes_ +
         (connection_ ? connection_->bytes_queued() - connection_->bytes_written() : 0);
}

void ClientConnection::DrainWaiting() {
  while (!waiting_.empty() && !closed()) {
    auto& [correlation_id, frame] = waiting_.front();
    const bool abandoned = !pending_.contains(correlation_id);
    if (!abandoned && connection_->bytes_queued() - connection_->bytes_written() > kHandOffWindow) {
      return;
    }
    const int64_t id = correlation_id;
    net::BufferChain bytes = std::move(frame);
    waiting_bytes_ -= bytes.size();
    waiting_.pop_front();
    if (!abandoned) WriteFrame(id, std::move(bytes));  // may close (and clear waiting_)
  }
}

void ClientConnection::ArmWatchdog(bool fast) {
  const ChannelOptions& options = core_->options();
  // A quarter of the shortest timeout (at most 1 s); 1 ms while requests wait for the window.
  int64_t period_ms = 1000;
  for (int64_t timeout_ms : {options.read_timeout_ms, options.write_timeout_ms}) {
    if (timeout_ms > 0) period_ms = std::min(period_ms, std::max<int64_t>(timeout_ms / 4, 1));
  }
  if (fast) {
    period_ms = 1;
  } else if (options.read_timeout_ms <= 0 && options.write_timeout_ms <= 0) {
    return;  // nothing to watch
  }
  const auto at = Clock::now() + std::chrono::milliseconds(period_ms);
  if (watchdog_armed_ && watchdog_.expiry() <= at) return;
  watchdog_armed_ = true;
  watchdog_.expires_at(at);  // cancels a later wait (its handler sees operation_aborted)
  watchdog_.async_wait([self = shared_from_this()](const asio::error_code& error) {
    if (error) return;
    self->watchdog_armed_ = false;
    self->OnWatchdog();
  });
}

void ClientConnection::OnWatchdog() {
  if (closed() || !connection_) return;
  DrainWaiting();
  if (closed()) return;
  const ChannelOptions& options = core_->options();
  const Clock::time_point now = Clock::now();
  if (options.read_timeout_ms > 0 && partial_since_ != Clock::time_point{} &&
      now - partial_since_ > std::chrono::milliseconds(options.read_timeout_ms)) {
    CloseStuck("a reply frame stayed incomplete for more than read_timeout_ms=" +
               std::to_string(options.read_timeout_ms));
    return;
  }
  const uint64_t written = connection_->bytes_written();
  const bool unsent = UnsentBytes() > 0;
  if (!unsent) {
    write_progress_at_ = {};
  } else if (write_progress_at_ == Clock::time_point{} || written != last_written_) {
    write_progress_at_ = now;
  } else if (options.write_timeout_ms > 0 &&
             now - write_progress_at_ > std::chrono::milliseconds(options.write_timeout_ms)) {
    CloseStuck("the server accepted no byte of its requests for more than write_timeout_ms=" +
               std::to_string(options.write_timeout_ms));
    return;
  }
  last_written_ = written;
  if (!waiting_.empty()) {
    ArmWatchdog(/*fast=*/true);
  } else if (unsent || !pending_.empty() || partial_since_ != Clock::time_point{}) {
    ArmWatchdog(/*fast=*/false);
  }
}

void ClientConnection::CloseStuck(const std::string& why) {
  if (closed()) return;
  core_->counters().stuck_connections.fetch_add(1, std::memory_order_relaxed);
  server_->OnConnectionFailed();  // before the calls retry: they then avoid this server
  close_code_ = EFAILEDSOCKET;
  close_text_ = "Connection to " + server_->remote_side() + " closed as stuck: " + why;
  if (connection_) {
    connection_->Close();  // OnSocketClosed fails the calls
  } else {
    FailAll(close_code_, close_text_, 0);
  }
}

void ClientConnection::WriteFrame(int64_t correlation_id, net::BufferChain frame) {
  auto it = pending_.find(correlation_id);
  if (it == pending_.end()) return;  // abandoned (timed out) while waiting for the connect
  it->second.queued = true;
  // May fail the write at once (on this thread) and close: OnSocketClosed then runs in here and
  // drops connection_, so write through a local reference. The end offset is set before that,
  // counting the stream frames other threads wrote before this one.
  const std::shared_ptr<net::Connection> connection = connection_;
  connection->Write(std::move(frame), &it->second.end_offset);
}

void ClientConnection::Abandon(int64_t correlation_id, bool timed_out, Clock::time_point call_start,
                               Clock::time_point ended) {
  // Counted here, on the caller's side of the timeout, so that the manager stops handing this
  // connection out before the caller can start its next call.
  const bool stuck = timed_out && !exclusive_ && CountTimeout(call_start, ended);
  asio::post(loop_, [self = shared_from_this(), correlation_id, stuck] {
    // An unsent request stays in waiting_ until DrainWaiting() drops it.
    const bool forgot = self->pending_.erase(correlation_id) != 0;
    if (forgot && self->grpc_) {  // RST_STREAM CANCEL, or dropped while it waits for a stream
      self->grpc_->Cancel(correlation_id);
      self->FlushGrpc();
    }
    if (!forgot && !stuck) return;
    if (stuck) {
      self->CloseStuck(std::to_string(self->core_->options().max_consecutive_timeouts) +
                       " calls in a row timed out with no reply read in between");
      return;
    }
    if (self->exclusive_ && !self->closed()) {
      self->close_code_ = EFAILEDSOCKET;
      self->close_text_ = "Connection closed after its call timed out";
      if (self->connection_) {
        self->connection_->Close();
      } else {
        self->FailAll(self->close_code_, self->close_text_, 0);
      }
    }
  });
}

bool ClientConnection::CountTimeout(Clock::time_point call_start, Clock::time_point ended) {
  const int max_timeouts = core_->options().max_consecutive_timeouts;
  if (max_timeouts <= 0 || closed()) return false;
  int64_t last = last_counted_timeout_ns_.load(std::memory_order_acquire);
  // Calls that started before the last counted timeout happened time out "together" with it.
  if (call_start.time_since_epoch().count() <= last) return false;
  if (!last_counted_timeout_ns_.compare_exchange_strong(last, ended.time_since_epoch().count(),
                                                        std::memory_order_acq_rel)) {
    return false;  // another call's timeout was counted just now: the same event
  }
  if (timeouts_in_a_row_.fetch_add(1, std::memory_order_acq_rel) + 1 < max_timeouts) return false;
  return !retiring_.exchange(true, std::memory_order_acq_rel);  // one close
}

void ClientConnection::Close(int code, std::string text) {
  asio::post(loop_, [self = shared_from_this(), code, text = std::move(text)]() mutable {
    if (self->closed()) return;
    self->close_code_ = code;
    self->close_text_ = std::move(text);
    if (self->connection_) {
      self->connection_->Close();  // OnSocketClosed fails the calls
    } else {
      asio::error_code ignored;
      self->connecting_socket_.close(ignored);
      self->connect_timer_.cancel();
      self->FailAll(self->close_code_, self->close_text_, 0);
    }
  });
}

bool ClientConnection::OnInput(net::BufferChain& input) {
  if (grpc_) return OnGrpcInput(input);
  bool got_frame = false;
  for (;;) {
    const protocol::FrameKind kind = protocol::PeekFrameKind(input);
    if (kind == protocol::FrameKind::kStream) {
      protocol::StreamFrame stream_frame;
      const protocol::DecodeStatus status = stream_decoder_.Next(input, &stream_frame);
      if (status == protocol::DecodeStatus::kFrame) {
        got_frame = true;
        if (!HandleStreamFrame(stream_frame)) return false;
        if (closed()) return true;
        continue;
      }
      if (status == protocol::DecodeStatus::kError) {
        close_code_ = EINVAL;
        close_text_ =
            "Bad stream frame from " + server_->remote_side() + ": " + stream_decoder_.error();
        return false;
      }
    }
    protocol::Frame frame;
    const bool not_rpc =
        kind == protocol::FrameKind::kStream || kind == protocol::FrameKind::kNeedMore;
    switch (not_rpc ? protocol::DecodeStatus::kNeedMore : decoder_.Next(input, &frame)) {
      case protocol::DecodeStatus::kNeedMore:
        if (input.empty()) {
          partial_since_ = {};
        } else if (got_frame || partial_since_ == Clock::time_point{}) {
          partial_since_ = Clock::now();  // read_timeout_ms counts per frame
          if (!watchdog_armed_) ArmWatchdog(/*fast=*/false);
        }
        return true;
      case protocol::DecodeStatus::kFrame:
        got_frame = true;
        if (timeouts_in_a_row_.load(std::memory_order_relaxed) != 0) {
          timeouts_in_a_row_.store(0, std::memory_order_relaxed);
        }
        HandleFrame(frame, decoder_.attachment_error());
        if (closed()) return true;  // the frame's call closed us (exclusive) — stop reading
        break;
      case protocol::DecodeStatus::kError:
        // Like brpc (spec §7.4): pending calls fail with EINVAL, the connection is closed.
        close_code_ = EINVAL;
        close_text_ = "Bad response frame from " + server_->remote_side() + ": " + decoder_.error();
        return false;
    }
  }
}

bool ClientConnection::HandleStreamFrame(protocol::StreamFrame& stream_frame) {
  if (!stream_host_) {
    auto executor = loop_.get_executor();
    stream::StreamHost::Limits limits;
    limits.max_unwritten_bytes = core_->options().max_unwritten_bytes;
    stream_host_ = std::make_shared<stream::StreamHost>(
        connection_, executor,
        [executor](std::function<void()> turn) { asio::post(executor, std::move(turn)); },
        limits, /*client_side=*/true);
  }
  net::BufferChain reply;
  if (!stream_host_->Dispatch(std::move(stream_frame), &reply)) return true;
  // The first DATA of our stream is the call's reply frame (brpc's accepting reply).
  protocol::FrameDecoder decoder(core_->options().max_body_size);
  protocol::Frame frame;
  if (decoder.Next(reply, &frame) != protocol::DecodeStatus::kFrame || !reply.empty()) {
    close_code_ = EINVAL;
    close_text_ = "Bad reply frame in a stream from " + server_->remote_side() +
                  (decoder.error().empty() ? std::string(": trailing bytes") : ": " + decoder.error());
    return false;
  }
  HandleFrame(frame, decoder.attachment_error());
  return true;
}

void ClientConnection::HandleFrame(protocol::Frame& frame, bool attachment_error) {
  const int64_t correlation_id = frame.meta.correlation_id();
  auto it = pending_.find(correlation_id);
  if (it == pending_.end()) {  // late (after a timeout), duplicate or never sent: drop, keep going
    core_->counters().dropped_responses.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::shared_ptr<ClientCall> call = std::move(it->second.call);
  pending_.erase(it);
  // Back to the pool before the caller hears of the reply, so that its next call finds it.
  if (exclusive_ && pending_.empty() && !closed()) {
    server_->connections().OnExclusiveCallDone(shared_from_this());
  }
  call->OnReply(correlation_id, frame, attachment_error);
}

void ClientConnection::OnSocketClosed(net::Connection& connection) {
  int code = close_code_;
  std::string text = close_text_;
  if (code == 0) {
    // The peer or the network broke it under calls (an idle connection the server closed is
    // not a failure: the next connect tells).
    if (!pending_.empty()) server_->OnConnectionFailed();
    const asio::error_code& error = connection.close_error();
    if (std::string tls_error = connection.tls_error(); !tls_error.empty()) {
      code = EFAILEDSOCKET;
      text = "TLS with " + server_->remote_side() + " failed: " + tls_error;
    } else if (error == asio::error::eof) {
      code = EEOF;
      text = "Got EOF of " + server_->remote_side();
    } else if (error && error.category() == asio::system_category()) {
      code = error.value();  // ECONNRESET, EPIPE, ...
      text = "Connection to " + server_->remote_side() + " broken: " + error.message();
    } else {
      code = EFAILEDSOCKET;
      text = "Connection to " + server_->remote_side() + " closed" +
             (error ? ": " + error.message() : std::string());
    }
  }
  FailAll(code, text, connection.bytes_written());
}

void ClientConnection::FailAll(int code, const std::string& text, uint64_t bytes_written) {
  if (closed_.exchange(true, std::memory_order_acq_rel)) return;
  if (close_code_ == 0) close_code_ = code, close_text_ = text;
  // The manager must stop handing us out before the failed calls retry.
  server_->connections().OnClosed(this);
  std::unordered_map<int64_t, Pending> pending = std::move(pending_);
  pending_.clear();
  waiting_.clear();
  waiting_bytes_ = 0;
  watchdog_.cancel();
  watchdog_armed_ = false;
  for (auto& [correlation_id, entry] : pending) {
    const bool sent = entry.queued && entry.end_offset <= bytes_written;
    entry.call->OnAttemptFailed(correlation_id, code, text, sent);
  }
  std::unordered_map<int64_t, GrpcStreamEntry> streams = std::move(grpc_streams_);
  grpc_streams_.clear();
  for (auto& [tag, entry] : streams) entry.call->OnFailed(code, text);
  if (stream_host_) stream_host_->Close(code, text);
  connection_.reset();  // breaks the cycle through our Delegate
}

}  // namespace arenarpc::client
