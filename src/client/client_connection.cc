#include "client/client_connection.h"

#include <asio/post.hpp>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "arenarpc/error_codes.h"
#include "client/channel_core.h"
#include "client/client_call.h"
#include "client/connection_manager.h"
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
      watchdog_(loop) {
  // Last: the session may ask this host about itself.
  session_ = core->protocol().NewSession(*this, core->options());
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
  session_->OnConnected();  // what waited for the connect (gRPC: the preface and SETTINGS first)
  if (!closed()) ArmWatchdog(session_->requests_waiting());
}

void ClientConnection::Submit(std::shared_ptr<ClientCall> call, int64_t correlation_id,
                              PackedRequest&& request) {
  asio::post(loop_, [self = shared_from_this(), call = std::move(call), correlation_id,
                     request = std::move(request)]() mutable {
    self->DoSubmit(std::move(call), correlation_id, std::move(request));
  });
}

ClientConnection::Pending* ClientConnection::Admit(const std::shared_ptr<ClientCall>& call,
                                                  int64_t correlation_id, size_t bytes) {
  if (closed()) {  // lost a race with a failure: retryable, nothing was sent
    call->OnAttemptFailed(correlation_id, close_code(), close_text(), false);
    return nullptr;
  }
  const uint64_t unsent = UnsentBytes();
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
                                PackedRequest&& request) {
  Pending* pending = Admit(call, correlation_id, session_->RequestBytes(request));
  if (pending == nullptr) return;
  pending->call = std::move(call);
  session_->Submit(correlation_id, std::move(request));
}

uint64_t ClientConnection::UnsentBytes() const noexcept {
  return session_->unsent_request_bytes() + socket_unsent_bytes();
}

uint64_t ClientConnection::socket_unsent_bytes() const noexcept {
  // Stream frames count too: they share the connection's output.
  return connection_ ? connection_->bytes_queued() - connection_->bytes_written() : 0;
}

void ClientConnection::ArmWatchdog(bool fast) {
  const ChannelOptions& options = core_->options();
  // A quarter of the shortest timeout (at most 1 s); 1 ms while requests wait for the window.
  int64_t period_ms = 1000;
  for (std::chrono::milliseconds timeout : {options.read_timeout, options.write_timeout}) {
    if (timeout.count() > 0) {
      period_ms = std::min(period_ms, std::max<int64_t>(timeout.count() / 4, 1));
    }
  }
  if (fast) {
    period_ms = 1;
  } else if (options.read_timeout.count() <= 0 && options.write_timeout.count() <= 0) {
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
  session_->Pump();
  if (closed()) return;
  const ChannelOptions& options = core_->options();
  const Clock::time_point now = Clock::now();
  const Clock::time_point partial_since = session_->partial_reply_since();
  if (options.read_timeout.count() > 0 && partial_since != Clock::time_point{} &&
      now - partial_since > options.read_timeout) {
    CloseStuck("a reply frame stayed incomplete for more than read_timeout=" +
               std::to_string(options.read_timeout.count()) + "ms");
    return;
  }
  const uint64_t written = connection_->bytes_written();
  // The socket's own: after Pump(), requests still held wait for it to drain (the session's
  // flow-controlled bytes, gRPC's, do not count as stuck writes).
  const bool unsent = connection_->bytes_queued() - written > 0;
  if (!unsent) {
    write_progress_at_ = {};
  } else if (write_progress_at_ == Clock::time_point{} || written != last_written_) {
    write_progress_at_ = now;
  } else if (options.write_timeout.count() > 0 &&
             now - write_progress_at_ > options.write_timeout) {
    CloseStuck("the server accepted no byte of its requests for more than write_timeout=" +
               std::to_string(options.write_timeout.count()) + "ms");
    return;
  }
  last_written_ = written;
  if (session_->requests_waiting()) {
    ArmWatchdog(/*fast=*/true);
  } else if (unsent || !pending_.empty() || partial_since != Clock::time_point{}) {
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

bool ClientConnection::WriteRequest(int64_t correlation_id, net::BufferChain&& bytes) {
  auto it = pending_.find(correlation_id);
  if (it == pending_.end()) return false;  // abandoned (timed out) while it waited
  it->second.queued = true;
  // May fail the write at once (on this thread) and close: OnSocketClosed then runs in here and
  // drops connection_, so write through a local reference. The end offset is set before that,
  // counting the stream frames other threads wrote before this one.
  const std::shared_ptr<net::Connection> connection = connection_;
  connection->Write(std::move(bytes), &it->second.end_offset);
  return true;
}

void ClientConnection::WriteOutput(net::BufferChain&& bytes, std::span<const int64_t> started) {
  // Only this thread writes to a connection whose session writes this way: exact.
  const uint64_t end = connection_->bytes_queued() + bytes.size();
  for (int64_t id : started) {
    auto it = pending_.find(id);
    if (it != pending_.end()) it->second.end_offset = end, it->second.queued = true;
  }
  if (bytes.empty()) return;
  const std::shared_ptr<net::Connection> connection = connection_;
  connection->Write(std::move(bytes));  // may close (FailAll) right here
}

bool ClientConnection::Awaits(int64_t correlation_id) const noexcept {
  return pending_.contains(correlation_id);
}

std::shared_ptr<ClientCall> ClientConnection::TakeCall(int64_t correlation_id) {
  auto it = pending_.find(correlation_id);
  if (it == pending_.end()) {  // late (after a timeout), duplicate or never sent: drop, keep going
    core_->counters().dropped_responses.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  std::shared_ptr<ClientCall> call = std::move(it->second.call);
  pending_.erase(it);
  return call;
}

void ClientConnection::Complete(int64_t correlation_id, ClientReply& reply) {
  std::shared_ptr<ClientCall> call = TakeCall(correlation_id);
  if (!call) return;
  ReleaseIfIdle();  // back to the pool before the caller hears of the reply: its next call finds it
  call->OnReply(correlation_id, reply);
}

void ClientConnection::FailAttempt(int64_t correlation_id, int code, const std::string& text,
                                   bool request_sent) {
  std::shared_ptr<ClientCall> call = TakeCall(correlation_id);
  if (!call) return;
  // An unsent request's connection is going away (GOAWAY, refused): not back to the pool.
  if (request_sent) ReleaseIfIdle();
  call->OnAttemptFailed(correlation_id, code, text, request_sent);
}

void ClientConnection::ReleaseIfIdle() {
  if (exclusive_ && pending_.empty() && session_->open_streams() == 0 && !closed()) {
    server_->connections().OnExclusiveCallDone(shared_from_this());
  }
}

void ClientConnection::OnReplyRead() noexcept {
  if (timeouts_in_a_row_.load(std::memory_order_relaxed) != 0) {
    timeouts_in_a_row_.store(0, std::memory_order_relaxed);
  }
}

const std::string& ClientConnection::remote_side() const noexcept {
  return server_->remote_side();
}

int ClientConnection::close_code() const noexcept {
  return close_code_ != 0 ? close_code_ : EFAILEDSOCKET;
}

std::string ClientConnection::close_text() const {
  return close_text_.empty() ? "Connection to " + server_->remote_side() + " closed" : close_text_;
}

void ClientConnection::SetCloseReason(int code, std::string text) {
  close_code_ = code;
  close_text_ = std::move(text);
}

void ClientConnection::CloseSocket(int code, std::string text) {
  SetCloseReason(code, std::move(text));
  if (connection_) connection_->Close();  // OnSocketClosed fails the calls
}

void ClientConnection::Abandon(int64_t correlation_id, bool timed_out, Clock::time_point call_start,
                               Clock::time_point ended) {
  // Counted here, on the caller's side of the timeout, so that the manager stops handing this
  // connection out before the caller can start its next call.
  const bool stuck = timed_out && !exclusive_ && CountTimeout(call_start, ended);
  asio::post(loop_, [self = shared_from_this(), correlation_id, stuck] {
    // An unsent request stays queued in the session until its Pump() drops it.
    const bool forgot = self->pending_.erase(correlation_id) != 0;
    if (forgot) self->session_->Abandon(correlation_id);
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

bool ClientConnection::OnInput(net::BufferChain& input) { return session_->OnInput(input); }

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
  watchdog_.cancel();
  watchdog_armed_ = false;
  for (auto& [correlation_id, entry] : pending) {
    const bool sent = entry.queued && entry.end_offset <= bytes_written;
    entry.call->OnAttemptFailed(correlation_id, code, text, sent);
  }
  session_->OnClosed(code, text);  // queued requests, streams
  connection_.reset();  // breaks the cycle through our Delegate
}

}  // namespace arenarpc::client
