#pragma once
// ServerConnection: the server's side of one connection. Recognises the connection's protocol from
// its first bytes (server_protocol.h), lets the protocol decode requests, and takes each decoded
// call or page through admission (stopping → ELOGOFF, max_concurrency / a full server queue / a
// predicted wait in it past half the call's deadline → ELIMIT, attachment_size → EREQUEST, name resolution → ENOSERVICE/ENOMETHOD, too much unsent
// output → EOVERCROWDED) into the connection's backlog.
//
// The backlog is drained by at most one task per handler thread: the reading thread starts one
// and runs it itself once reading has been re-armed (run to completion when nothing else waits);
// more are queued for the other threads when more requests wait. A drainer runs one call and, if
// requests remain, queues itself again behind the other connections' work, so one connection
// holds at most one place per thread in the shared queue and calls of a connection run in
// parallel without a blocking call holding up the rest. Decoding (and reading) pauses while the
// backlog holds max_queued_requests_per_connection calls or max_queued_request_bytes bytes.

#include <atomic>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "net/connection.h"
#include "server/admission_ticket.h"
#include "server/call_task.h"
#include "server/cancel_registry.h"
#include "server/connection_table.h"
#include "server/fiber_shares.h"
#include "server/server_protocol.h"
#include "server/server_protocol_table.h"
#include "server/server_state.h"
#include "server/service_registry.h"

namespace arenarpc::server {

class ServerConnection final : public net::Connection::Delegate,
                               public ServedConnection,
                               public ProtocolOwner {
 public:
  // `internal_port`: accepted on ServerOptions::internal_port (built-in services only).
  // `protocol`: the protocol the connection speaks; null: recognised from its first bytes (a test
  // gives its own).
  ServerConnection(ServerState* state, int max_drainers, bool internal_port,
                   const ServerProtocolEntry* protocol = nullptr);
  net::Connection::InputResult OnInput(net::Connection& connection, net::BufferChain& input,
                                       net::Connection::Clock::time_point read_at) override;
  void OnClosed(net::Connection& connection) override;
  void OnTlsHandshakeDone(net::Connection& connection) override;
  void OnOutputDrained(net::Connection& connection) override;

  // "baidu_std", "http"; "unknown" until the first bytes are in. Any thread.
  std::string_view protocol_name() const noexcept override;
  // Replies the protocol holds for their turn (HTTP), bytes of memory. Any thread.
  size_t held_reply_bytes() const noexcept override;
  // Server::Stop() began (ServerProtocol::OnServerStopping). Any thread.
  void OnServerStopping(net::Connection& connection);
  // The protocol's held replies went below its bound: re-evaluates whether reading may resume.
  void OnRepliesDrained(net::Connection& connection) override;

 private:
  class Drainer;
  // Admits what the protocol's Next() decoded into decoded_ (kCall, kTask): hands it on, moved
  // into a PendingCall on `admitted` ready for the backlog. false: rejected and answered, and
  // dropped (all it held released). Either way decoded_ is ready for the next Next().
  bool AdmitDecoded(net::Connection& connection, ServerProtocol::Step step,
                    net::Connection::Clock::time_point read_at, std::vector<PendingCall>* admitted);
  // Admission of one call (stopping -> ELOGOFF, max_queued_requests / max_concurrency -> ELIMIT,
  // invalid_code, names -> ENOSERVICE/ENOMETHOD, unsent output -> EOVERCROWDED); rejections are
  // answered through the protocol. nullptr = rejected.
  std::unique_ptr<ServerCall> Admit(net::Connection& connection, const CallHead& head,
                                    net::Connection::Clock::time_point read_at);
  // Admits a large request from its head (ServerProtocol::Step::kHead) into head_call_. false:
  // refused and answered.
  bool AdmitHead(net::Connection& connection, net::Connection::Clock::time_point read_at);
  // Admission of work that is not a method call (an HTTP built-in page): stopping, the queue and
  // concurrency limits and unsent output as for a call. An empty ticket: rejected and answered.
  AdmissionTicket AdmitTask(net::Connection& connection, int64_t key);
  // Picks the protocol from the first bytes; false = none matches (close).
  bool Recognize(net::Connection& connection, const net::BufferChain& input, bool* need_more);
  // One drainer's turn: starts the oldest backlog call; queues the drainer again if more wait.
  void DrainOne(net::Connection& connection);
  void PostDrainer(net::Connection& connection);
  // Admission's first checks (stopping, max_queued_requests, the predicted wait against
  // `timeout_ms` — the client's deadline, negative: none —, max_concurrency). The admitted unit's
  // ticket; an empty one: rejected and answered.
  AdmissionTicket AdmitFirst(net::Connection& connection, int64_t key, int32_t timeout_ms);
  bool Overcrowded(const net::Connection& connection) const;
  // ServerOptions::auth for one admitted call: true with the context to show its handler
  // (*call_context set when it is the call's own); false: answered ERPCAUTH.
  bool Authenticate(net::Connection& connection, const CallHead& head,
                    std::unique_ptr<AuthContext>* call_context, const AuthContext** context);
  // Answers a rejected request: counts it in `counter` (may be null) and sends the error. An
  // admitted one's ticket settles after this, as the caller drops it.
  void Reject(net::Connection& connection, int64_t key, int code, std::string_view text,
              std::atomic<uint64_t>* counter);
  bool BacklogFull() const;                             // backlog_mutex_ held
  bool ProtocolSaturated() const;
  void UpdateReadBlock(net::Connection& connection);    // backlog_mutex_ held
  bool DrainerEndsLocked();  // backlog_mutex_ held; true: close the connection now

  ServerState* state_;  // outlives every connection (Join closes them all first)
  const int max_drainers_;
  const bool internal_port_;
  const ServerProtocolEntry* const given_protocol_;
  bool transport_chosen_ = false;  // TLS or clear text (server_tls.h); the reading thread
  // ServerOptions::auth, per connection (baidu_std): set by the reading thread before the first
  // call that shows it is admitted, then fixed.
  bool authenticated_ = false;
  AuthContext auth_context_;
  std::unique_ptr<ServerProtocol> protocol_;  // set by the first OnInput, then fixed
  // OnInput's calls admitted from one read, kept for its capacity (OnInput runs for one
  // connection at a time, as its input buffer is read; at most max_queued_requests_per_connection).
  std::vector<PendingCall> admitted_;
  // What the protocol's Next() decodes, for AdmitDecoded() (the reading thread's, as admitted_);
  // holds nothing between two requests.
  Decoded decoded_;
  LastResolved last_resolved_;  // Admit()'s (the reading thread's)
  // protocol_'s entry once protocol_ is set (read by other threads).
  std::atomic<const ServerProtocolEntry*> entry_{nullptr};

  std::mutex backlog_mutex_;
  std::deque<PendingCall> backlog_;
  // A large request admitted from its head, waiting for its body (the reading thread sets and
  // takes it; OnClosed drops it). Keeps the connection alive: OnClosed breaks the cycle.
  std::unique_ptr<ServerCall> head_call_;
  bool head_admitted_ = false;  // the reading thread's: head_call_ may be set (no lock to ask)
  size_t backlog_bytes_ = 0;
  int drainers_ = 0;        // drainers running or queued
  bool read_blocked_ = false;
  // A malformed frame came behind calls not started yet: reading stopped for good, and the
  // connection closes (once flushed) when the last of them has started.
  bool close_after_backlog_ = false;
  CancelRegistry cancels_;  // calls waiting in NotifyOnCancel(); fired by OnClosed
  // The handler fibers this connection holds (FiberShares); also kept by their tickets.
  const std::shared_ptr<FiberShares::Connection> fiber_share_ =
      std::make_shared<FiberShares::Connection>();
};

}  // namespace arenarpc::server
