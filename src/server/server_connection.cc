#include "server/server_connection.h"

#include <asio/post.hpp>

#include <algorithm>
#include <utility>
#include <vector>

#include "arenarpc/error_codes.h"
#include "call/controller_access.h"
#include "protocol/meta_builder.h"
#include "protocol/wire_protocol.h"
#include "net/tls_session.h"
#include "server/capture_seam.h"
#include "server/server_call.h"
#include "server/server_tls.h"

namespace arenarpc::server {
namespace {
// Input decoded per turn of a connection's read loop, in bytes and in requests or frames, before
// the rest waits behind the other connections' work (OnInput). Decoding a frame only cuts its
// bytes off the input (the payload is parsed on the call's thread), so the bound is far above a
// request's size: a turn must decode several large requests while a thread runs one, or the
// backlog never grows, deadline-aware admission sees no queue and calls time out in the socket
// (docs/server.md, "Overload").
constexpr size_t kInputPerTurn = 1u << 20;
constexpr int kStepsPerTurn = 256;
// Read past a large request's end, or after one refused from its head: enough for the next
// request's head (its meta), little of a body that may be refused unread.
constexpr size_t kHeadLookahead = 4u << 10;
}  // namespace

// A turn of draining a connection's backlog, as a task the connection runs after a read.
class ServerConnection::Drainer final : public net::InputTask {
 public:
  explicit Drainer(std::shared_ptr<net::Connection> connection)
      : connection_(std::move(connection)) {}
  void Run() override {
    static_cast<ServerConnection&>(connection_->delegate()).DrainOne(*connection_);
  }

 private:
  std::shared_ptr<net::Connection> connection_;  // keeps this ServerConnection alive
};

ServerConnection::ServerConnection(ServerState* state, int max_drainers, bool internal_port,
                                   const ServerProtocolEntry* protocol)
    : state_(state),
      max_drainers_(max_drainers),
      internal_port_(internal_port),
      given_protocol_(protocol) {}

bool ServerConnection::Recognize(net::Connection& connection, const net::BufferChain& input,
                                 bool* need_more) {
  if (given_protocol_ != nullptr) {
    protocol_ = given_protocol_->create(*state_, *this, internal_port_);
    entry_.store(given_protocol_, std::memory_order_release);
    return true;
  }
  const protocol::WireProtocol wire = protocol::RecognizeProtocol(input);
  *need_more = wire == protocol::WireProtocol::kNeedMore;
  if (*need_more) return true;
  const ServerProtocolEntry* entry = FindServerProtocol(wire);
  if (entry == nullptr) {
    state_->counters.malformed_frames.fetch_add(1, std::memory_order_relaxed);
    state_->counters.malformed_log.Log(
        "closing connection from " + connection.remote_side() +
        (wire == protocol::WireProtocol::kTls
             ? std::string(connection.tls() != nullptr
                               ? ": a TLS ClientHello inside the TLS session (TLS twice)"
                               : ": a TLS ClientHello, but TLS is off (ServerOptions::tls)")
             : std::string(": neither baidu_std (\"PRPC\"), HTTP (a method token) nor HTTP/2 "
                           "(its preface)")));
    return false;
  }
  if (internal_port_ && wire != protocol::WireProtocol::kHttp) {
    // The internal port serves the built-in pages, over HTTP only: no method is called there,
    // whatever the protocol (its HTTP answers a method's path 404).
    state_->counters.malformed_frames.fetch_add(1, std::memory_order_relaxed);
    state_->counters.malformed_log.Log("closing connection from " + connection.remote_side() +
                                       " to internal_port: it serves the built-in pages over "
                                       "HTTP/1.1 only; methods are called on the main port");
    return false;
  }
  protocol_ = entry->create(*state_, *this, internal_port_);
  entry_.store(entry, std::memory_order_release);
  return true;
}

bool ServerConnection::BacklogFull() const {
  const ServerOptions& options = state_->config.options;
  return backlog_.size() >= static_cast<size_t>(options.max_queued_requests_per_connection) ||
         backlog_bytes_ > options.max_queued_request_bytes || ProtocolSaturated();
}

bool ServerConnection::ProtocolSaturated() const {
  return entry_.load(std::memory_order_acquire) != nullptr && protocol_->Saturated();
}

std::string_view ServerConnection::protocol_name() const noexcept {
  const ServerProtocolEntry* entry = entry_.load(std::memory_order_acquire);
  return entry != nullptr ? entry->name : "unknown";
}

size_t ServerConnection::held_reply_bytes() const noexcept {
  return entry_.load(std::memory_order_acquire) != nullptr ? protocol_->HeldBytes() : 0;
}

void ServerConnection::OnServerStopping(net::Connection& connection) {
  if (entry_.load(std::memory_order_acquire) != nullptr) protocol_->OnServerStopping(connection);
}

void ServerConnection::OnRepliesDrained(net::Connection& connection) {
  std::lock_guard lock(backlog_mutex_);
  UpdateReadBlock(connection);
}

net::Connection::InputResult ServerConnection::OnInput(
    net::Connection& connection, net::BufferChain& input,
    net::Connection::Clock::time_point read_at) {
  net::Connection::InputResult result;
  if (!transport_chosen_) {
    switch (ChooseTransport(*state_, connection, input)) {
      case Transport::kNeedMore:
        return result;
      case Transport::kRefused:
        result.keep_open = false;
        return result;
      case Transport::kClearText:
      case Transport::kTls:  // the input is now plaintext, handed over as it is decrypted
        transport_chosen_ = true;
        break;
    }
  }
  if (!protocol_) {
    bool need_more = false;
    if (!Recognize(connection, input, &need_more)) {
      result.keep_open = false;
      return result;
    }
    if (need_more) return result;
  }
  std::vector<PendingCall>& admitted = admitted_;
  admitted.clear();
  size_t admitted_bytes = 0;
  // Fairness between connections: once this turn decoded kInputPerTurn of input or
  // kStepsPerTurn requests or frames, the rest waits
  // (unread) behind the other connections' work on this thread, as gRPC's protocol does with
  // nghttp2's input. Else a connection's 2 MiB wakeup of small frames (20,000 stream frames for
  // unknown streams) kept every other connection of the thread waiting for all of them.
  const size_t input_at_start = input.size();
  int steps = 0;
  bool full = false;
  {
    std::lock_guard lock(backlog_mutex_);
    full = BacklogFull();
  }
  while (!connection.closed()) {
    // A full backlog stops decoding: the rest stays in `input` until the backlog drains.
    if (full || protocol_->Saturated() ||
        admitted.size() >=
            static_cast<size_t>(state_->config.options.max_queued_requests_per_connection)) {
      result.input_waits = true;
      break;
    }
    const ServerProtocol::Step step = protocol_->Next(connection, input, read_at, &decoded_);
    if (step == ServerProtocol::Step::kNeedMore) break;
    if (step == ServerProtocol::Step::kYield) {
      result.input_waits = true;
      break;
    }
    if (step == ServerProtocol::Step::kHead) {
      // Admitted: held until its body is in (the next kCall). Refused: answered, and what is
      // still to come of it is discarded without being read.
      if (!AdmitHead(connection, read_at)) {
        result.message_completed = true;
        result.skip_bytes += protocol_->DropRequest(input);
        result.read_hint = kHeadLookahead;
      }
      continue;
    }
    result.message_completed = true;
    if (step == ServerProtocol::Step::kMalformed ||
        step == ServerProtocol::Step::kMalformedAnswered) {
      state_->counters.malformed_frames.fetch_add(1, std::memory_order_relaxed);
      state_->counters.malformed_log.Log("closing connection from " + connection.remote_side() +
                                         ": malformed " + std::string(protocol_->name()) +
                                         " request: " + protocol_->error());
      if (step == ServerProtocol::Step::kMalformed) {
        std::lock_guard lock(backlog_mutex_);
        if (admitted.empty() && backlog_.empty() && drainers_ == 0) {
          result.keep_open = false;
        } else {
          // Calls read before the bad bytes (this read's or earlier ones') are answered first.
          close_after_backlog_ = true;
          read_blocked_ = true;
          connection.SetDelegateBlocked(true);
        }
      }
      break;
    }
    if ((step == ServerProtocol::Step::kCall || step == ServerProtocol::Step::kTask) &&
        AdmitDecoded(connection, step, read_at, &admitted)) {
      admitted_bytes += admitted.back().payload.request_size;
      full = admitted_bytes > state_->config.options.max_queued_request_bytes;
    }
    if (!input.empty() &&
        (++steps >= kStepsPerTurn ||
         input_at_start - std::min(input_at_start, input.size()) >= kInputPerTurn)) {
      result.input_waits = true;
      break;
    }
  }
  result.message_in_progress = protocol_->InRequest();
  if (const size_t missing = protocol_->MissingBytes(input); missing > 0) {
    result.read_hint = missing + kHeadLookahead;
  }
  int start_drainers = 0;
  {
    std::lock_guard lock(backlog_mutex_);
    for (PendingCall& call : admitted) backlog_.push_back(std::move(call));
    admitted.clear();
    backlog_bytes_ += admitted_bytes;
    start_drainers = static_cast<int>(
        std::min<size_t>(static_cast<size_t>(max_drainers_ - drainers_), backlog_.size()));
    drainers_ += start_drainers;
    if (result.input_waits || BacklogFull()) {
      result.input_waits = true;
      UpdateReadBlock(connection);
    }
  }
  if (start_drainers > 0 && state_->runtime->workers() == nullptr) {
    result.run_next = std::make_unique<Drainer>(connection.shared_from_this());
    --start_drainers;
  }
  for (int i = 0; i < start_drainers; ++i) PostDrainer(connection);
  return result;
}

void ServerConnection::PostDrainer(net::Connection& connection) {
  auto run = [drainer = Drainer(connection.shared_from_this())]() mutable { drainer.Run(); };
  if (asio::thread_pool* workers = state_->runtime->workers()) {
    asio::post(*workers, std::move(run));
  } else {
    asio::post(connection.executor(), std::move(run));
  }
}

void ServerConnection::DrainOne(net::Connection& connection) {
  PendingCall call;
  bool close = false, popped = false;
  {
    std::lock_guard lock(backlog_mutex_);
    if (backlog_.empty()) {
      close = DrainerEndsLocked();
    } else {
      popped = true;
      call = std::move(backlog_.front());
      backlog_.pop_front();
      backlog_bytes_ -= call.payload.request_size;
      UpdateReadBlock(connection);
    }
  }
  if (popped) {
    call.Start();
    bool more = false;
    {
      std::lock_guard lock(backlog_mutex_);
      more = !backlog_.empty();
      if (!more) close = DrainerEndsLocked();
    }
    if (more) {
      PostDrainer(connection);  // behind whatever else waits for a thread
      return;
    }
  }
  // The calls read before a malformed frame have started (their replies queued, unless their
  // handlers went on asynchronously): close once those bytes are written. Outside the lock:
  // closing runs OnClosed, which takes it.
  if (close) connection.CloseWhenFlushed();
}

bool ServerConnection::DrainerEndsLocked() {
  --drainers_;
  return close_after_backlog_ && drainers_ == 0;
}

// Pauses reading while the backlog is full; resumes when it is down to half of both bounds.
void ServerConnection::UpdateReadBlock(net::Connection& connection) {
  if (close_after_backlog_) return;  // blocked until the close
  const ServerOptions& options = state_->config.options;
  const bool blocked =
      read_blocked_
          ? backlog_.size() > static_cast<size_t>(options.max_queued_requests_per_connection) / 2 ||
                backlog_bytes_ > options.max_queued_request_bytes / 2 || ProtocolSaturated()
          : BacklogFull();
  if (blocked == read_blocked_) return;
  read_blocked_ = blocked;
  connection.SetDelegateBlocked(blocked);
}

void ServerConnection::OnOutputDrained(net::Connection& connection) {
  if (entry_.load(std::memory_order_acquire) != nullptr) protocol_->OnOutputDrained(connection);
}

void ServerConnection::OnTlsHandshakeDone(net::Connection&) {
  state_->counters.tls_handshakes.fetch_add(1, std::memory_order_relaxed);
}

void ServerConnection::OnClosed(net::Connection& connection) {
  cancels_.Close();  // the client is gone: cancel its calls in flight
  if (entry_.load(std::memory_order_acquire) != nullptr) protocol_->OnClosed();
  // Calls that have not started would only produce replies nobody can receive: drop them (each
  // settles its admission). This also releases the connection they keep alive.
  std::deque<PendingCall> dropped;
  std::unique_ptr<ServerCall> head_call;
  {
    std::lock_guard lock(backlog_mutex_);
    dropped.swap(backlog_);
    head_call = std::move(head_call_);
    backlog_bytes_ = 0;
  }
  dropped.clear();
  switch (connection.close_reason()) {
    case net::CloseReason::kIdleTimeout:
      state_->counters.connections_closed_idle.fetch_add(1, std::memory_order_relaxed);
      break;
    case net::CloseReason::kReadTimeout:
      state_->counters.connections_closed_read_timeout.fetch_add(1, std::memory_order_relaxed);
      state_->counters.timeout_log.Log("closing connection from " + connection.remote_side() +
                                       ": a frame did not complete within read_timeout=" +
                                       std::to_string(state_->config.options.read_timeout.count()) +
                                       "ms");
      break;
    case net::CloseReason::kFirstByteTimeout:
      state_->counters.connections_closed_first_byte_timeout.fetch_add(1,
                                                                       std::memory_order_relaxed);
      break;
    case net::CloseReason::kWriteTimeout:
      state_->counters.connections_closed_write_timeout.fetch_add(1, std::memory_order_relaxed);
      state_->counters.timeout_log.Log(
          "closing connection from " + connection.remote_side() +
          ": its replies found no room in the socket (or, HTTP/2, in the client's flow-control "
          "window) for write_timeout=" +
          std::to_string(state_->config.options.write_timeout.count()) + "ms");
      break;
    default:
      break;
  }
  if (std::string tls_error = connection.tls_error(); !tls_error.empty()) {
    state_->counters.tls_failures.fetch_add(1, std::memory_order_relaxed);
    state_->counters.malformed_log.Log("closing connection from " + connection.remote_side() +
                                       ": TLS: " + tls_error);
  }
  state_->connections.Remove(connection.id());
}

void ServerConnection::Reject(net::Connection& connection, int64_t key, int code,
                              std::string_view text, std::atomic<uint64_t>* counter) {
  if (counter != nullptr) counter->fetch_add(1, std::memory_order_relaxed);
  protocol_->SendError(connection, key, {code, text});
}

AdmissionTicket ServerConnection::AdmitFirst(net::Connection& connection, int64_t key,
                                             int32_t timeout_ms) {
  ServerState& state = *state_;
  state.counters.requests.fetch_add(1, std::memory_order_relaxed);
  Admission::Verdict verdict;
  AdmissionTicket ticket = AdmissionTicket::Admit(
      state.admission, std::chrono::milliseconds(std::max(timeout_ms, 0)), &verdict);
  switch (verdict) {
    case Admission::Verdict::kAdmitted:
      return ticket;
    case Admission::Verdict::kStopping:
      Reject(connection, key, ELOGOFF, protocol::kServerStoppingText,
             &state.counters.rejected_stopping);
      return {};
    case Admission::Verdict::kQueueFull:
      Reject(connection, key, ELIMIT,
             "Reached server's max_queued_requests=" +
                 std::to_string(state.admission.max_queued_requests()),
             &state.counters.rejected_limit);
      return {};
    case Admission::Verdict::kWaitPastDeadline:
    case Admission::Verdict::kStandingQueue: {
      state.counters.rejected_queue_wait.fetch_add(1, std::memory_order_relaxed);
      const auto ms = [](std::chrono::nanoseconds duration) {
        return std::to_string(
            std::chrono::duration_cast<std::chrono::milliseconds>(duration).count());
      };
      const std::string wait = "~" + ms(state.admission.predicted_wait()) + "ms (" +
                               std::to_string(state.admission.queued()) + " calls queued";
      Reject(connection, key, ELIMIT,
             verdict == Admission::Verdict::kWaitPastDeadline
                 ? "The server's queue would hold the request " + wait +
                       "), past half of its timeout_ms=" + std::to_string(timeout_ms)
                 : "The server is overloaded: its queue has held every call longer than it "
                   "serves for a while, and would hold the request " +
                       wait + ", bound " + ms(state.admission.standing_bound()) + "ms)",
             &state.counters.rejected_limit);
      return {};
    }
    case Admission::Verdict::kOverLimit:
      Reject(connection, key, ELIMIT, protocol::MaxConcurrencyText(state.admission.limit()),
             &state.counters.rejected_limit);
      return {};
  }
  return {};
}

bool ServerConnection::Overcrowded(const net::Connection& connection) const {
  return connection.unwritten_held_bytes() + protocol_->HeldBytes() >=
         state_->config.options.max_unwritten_bytes;
}

std::unique_ptr<ServerCall> ServerConnection::Admit(net::Connection& connection,
                                                    const CallHead& head,
                                                    net::Connection::Clock::time_point read_at) {
  ServerState& state = *state_;
  const int64_t key = head.key;
  AdmissionTicket ticket = AdmitFirst(connection, key, head.timeout_ms);
  if (!ticket) return nullptr;
  // Admitted: a rejection from here settles the ticket as it goes out of scope, after its answer.
  if (head.invalid_code != 0) {
    Reject(connection, key, head.invalid_code, head.invalid_text, nullptr);
    return nullptr;
  }
  std::unique_ptr<AuthContext> call_auth;
  const AuthContext* auth_context = nullptr;
  if (state.config.options.auth != nullptr && !head.without_auth &&
      !Authenticate(connection, head, &call_auth, &auth_context)) {
    return nullptr;
  }
  int code = 0;
  std::string text;
  MethodEntry* method =
      head.method != nullptr ? head.method
                             : last_resolved_.Resolve(state.config.registry, head.service_name,
                                                      head.method_name, &code, &text);
  if (method == nullptr) {
    Reject(connection, key, code, text, &state.counters.rejected_unknown);
    return nullptr;
  }
  if (Overcrowded(connection)) {
    method->CountRejected(EOVERCROWDED);
    Reject(connection, key, EOVERCROWDED,
           "Connection to " + connection.remote_side() + " is overcrowded",
           &state.counters.rejected_overcrowded);
    return nullptr;
  }
  auto call = std::make_unique<ServerCall>(state.shared_from_this(), std::move(ticket),
                                           connection.shared_from_this(), &cancels_, fiber_share_,
                                           protocol_.get(), method, key, read_at);
  internal::ControllerAccess::set_remote_side_of(call->controller(), &connection.remote_side());
  if (head.timeout_ms >= 0) {
    internal::ControllerAccess::set_deadline_hint_ms(call->controller(), head.timeout_ms);
  }
  if (const net::TlsSession* tls = connection.tls()) {
    internal::ControllerAccess::set_tls_peer(call->controller(), &tls->peer());
  }
  if (auth_context != nullptr) {
    internal::ControllerAccess::set_auth_context(call->controller(), auth_context);
  }
  if (call_auth) call->set_auth_context(std::move(call_auth));
  return call;
}

bool ServerConnection::AdmitHead(net::Connection& connection,
                                 net::Connection::Clock::time_point read_at) {
  std::unique_ptr<ServerCall> call = Admit(connection, decoded_.call.head, read_at);
  if (!call) {
    decoded_.call = DecodedCall();
    return false;
  }
  head_admitted_ = true;
  std::lock_guard lock(backlog_mutex_);
  // Closed meanwhile: OnClosed has run (or runs after this) and will not see it; dropped here.
  if (!connection.closed()) head_call_ = std::move(call);
  return true;
}

bool ServerConnection::Authenticate(net::Connection& connection, const CallHead& head,
                                    std::unique_ptr<AuthContext>* call_context,
                                    const AuthContext** context) {
  if (!head.per_request_auth && authenticated_) {
    *context = &auth_context_;
    return true;
  }
  auto verified = std::make_unique<AuthContext>();
  if (head.credential_repeated ||
      state_->config.options.auth->VerifyCredential(
          std::string(head.credential), connection.remote_side(), verified.get()) != 0) {
    Reject(connection, head.key, ERPCAUTH, protocol::kAuthFailedText,
           &state_->counters.rejected_auth);
    // brpc closes a baidu_std connection whose credential failed.
    if (!head.per_request_auth) connection.CloseWhenFlushed();
    return false;
  }
  if (head.per_request_auth) {
    *call_context = std::move(verified);
    *context = call_context->get();
  } else {
    auth_context_ = std::move(*verified);
    authenticated_ = true;
    *context = &auth_context_;
  }
  return true;
}

AdmissionTicket ServerConnection::AdmitTask(net::Connection& connection, int64_t key) {
  AdmissionTicket ticket = AdmitFirst(connection, key, -1);
  if (ticket && Overcrowded(connection)) {
    Reject(connection, key, EOVERCROWDED,
           "Connection to " + connection.remote_side() + " is overcrowded",
           &state_->counters.rejected_overcrowded);
    return {};
  }
  return ticket;
}

bool ServerConnection::AdmitDecoded(net::Connection& connection, ServerProtocol::Step step,
                                    net::Connection::Clock::time_point read_at,
                                    std::vector<PendingCall>* admitted) {
  if (step == ServerProtocol::Step::kTask) {
    DecodedTask task = std::move(decoded_.task);  // dropped here when rejected
    AdmissionTicket ticket = AdmitTask(connection, task.key);
    if (!ticket) return false;
    ticket.Queued();
    task.task->Hold(std::move(ticket));
    admitted->emplace_back(std::move(task.task), task.request_size);
    return true;
  }
  DecodedCall& decoded = decoded_.call;
  std::unique_ptr<ServerCall> call;
  if (std::exchange(head_admitted_, false)) {  // admitted from its head
    std::lock_guard lock(backlog_mutex_);
    call = std::move(head_call_);
  }
  if (!call) call = Admit(connection, decoded.head, read_at);
  if (!call) {
    decoded = DecodedCall();  // dropped: what it held is released now
    return false;
  }
  if (decoded.capture) SubmitCapture(*state_->capture, std::move(*decoded.capture), call->method());
  call->TakeRequest(std::move(decoded.fields));
  call->WaitsForThread();
  admitted->emplace_back(std::move(call), std::move(decoded.payload));
  decoded.ResetHandedOn();
  return true;
}

}  // namespace arenarpc::server
