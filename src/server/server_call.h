#pragma once
// ServerCall: one request from parse to reply. It is the `done` closure handed to the handler:
// done->Run() (any thread, exactly once) serializes and queues the reply, records the stats and
// releases the request/response pair — or leaves it to the last RetainMessages() handle.

#include <google/protobuf/service.h>

#include <asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>

#include "arenarpc/controller.h"
#include "arenarpc/memory/message_memory.h"
#include "call/cancel_source.h"
#include "net/connection.h"
#include "protocol/payload_encoding.h"
#include "server/admission_ticket.h"
#include "server/cancel_registry.h"
#include "server/fiber_shares.h"
#include "server/method_entry.h"
#include "server/reply_sink.h"
#include "server/request_opener.h"
#include "server/server_state.h"
#include "util/thread_cpu_timer.h"

namespace arenarpc::server {

struct CallFields;  // decoded_call.h

// Also the controller's CancelSource: canceled once the connection closed or the deadline the
// client sent passed; NotifyOnCancel() callbacks run then, or when Run() finishes.
class ServerCall final : public google::protobuf::Closure, private internal::CancelSource {
 public:
  // `cancels`, `fiber_share` and `sink` are the connection's (the first and last live as long
  // as `connection`). `correlation_id` identifies the reply for the sink (baidu_std: the
  // correlation id).
  ServerCall(std::shared_ptr<ServerState> state, AdmissionTicket&& ticket,
             std::shared_ptr<net::Connection> connection,
             CancelRegistry* cancels, std::shared_ptr<FiberShares::Connection> fiber_share,
             ReplySink* sink, MethodEntry* method, int64_t correlation_id,
             std::chrono::steady_clock::time_point start);
  ~ServerCall() override;  // fires the NotifyOnCancel() callbacks that did not run yet

  Controller& controller() noexcept { return controller_; }
  const Controller& controller() const noexcept { return controller_; }
  int64_t correlation_id() const noexcept { return correlation_id_; }
  const MethodEntry& method() const noexcept { return *method_; }
  // The method's binding this call's messages come from (taken once, as it acquires them: a live
  // change of the method's memory mode leaves it alone). Set from Execute() on.
  const std::shared_ptr<MethodBinding>& binding() const noexcept { return binding_; }
  const net::Connection& connection() const noexcept { return *connection_; }
  ReplySink& sink() const noexcept { return *sink_; }
  // The call's messages (also once RetainMessages() took them).
  const memory::MessagePair& messages() const noexcept;
  // The call's own AuthContext (HTTP verifies per request); the controller points at it.
  void set_auth_context(std::unique_ptr<AuthContext> context) { auth_context_ = std::move(context); }

  // The request's part of the Controller (ids, trace, compression, user fields, attachment,
  // stream offer), handed over by admission from what the protocol decoded.
  void TakeRequest(CallFields&& fields);
  // Admitted into the connection's backlog: holds a place in the server's queue until Start().
  void WaitsForThread() { ticket_.Queued(); }

  // On a thread, after its time in the connection's backlog: records the time queued, drops a
  // call its client canceled meanwhile (RST_STREAM, connection closed: nothing is run, counted in
  // canceled_before_start), answers ERPCTIMEDOUT without running anything when the client's
  // deadline (its timeout_ms) has already passed, else Execute()s.
  static void Start(std::unique_ptr<ServerCall> call, RequestPayload payload);
  // The call will never start (its connection closed, or its threads went away first): counted
  // in canceled_before_start; its admission settles as it is destroyed.
  static void Abandon(std::unique_ptr<ServerCall> call, const RequestPayload& payload);

  // done->Run(): reply, stats, release. Deletes the call.
  void Run() override;
  // From the sink's Reply(), once, between packing and sending: `ok` false when the call failed
  // (the handler's error, or ERESPONSE). Counts the call and marks its span.
  void OnReplyPacked(bool ok, const net::BufferChain& reply);

 private:
  // Answers the call with an error instead of a reply (its handler did not run).
  void SendError(const CallError& error) { sink_->SendError(*connection_, correlation_id_, error); }
  // rpcz: the call's span when it is sampled (arenarpc/rpcz.h), else null.
  internal::SpanRecord* span() const noexcept;
  // A call answered with an error before (or instead of) its handler: the span says why.
  void NoteError(int code, std::string_view text);
  // The facts the span takes at the end (method, protocol, peer, memory), then its finish: once
  // the reply's last byte is written when the connection's writes can be followed, else now.
  void FinishSpan(const memory::MessagePair* pair, uint64_t queued_before);
  // The call ended (`ok`: with a reply, `reply_bytes` of it): its method's stats and memory
  // series, admission's view of the server's work.
  void CountEnded(bool ok, size_t reply_bytes);
  struct RetainedMessages;
  static std::shared_ptr<void> RetainHook(const Controller& controller);
  // Acquires the pair, parses the request into it and runs the handler on a new fiber, on this
  // thread until the handler returns or first waits. A call that fails here is answered (EREQUEST
  // / EINTERNAL, ELIMIT past max_fibers or one of its FiberShares) and destroyed; otherwise the
  // handler owns it until Run().
  static void Execute(std::unique_ptr<ServerCall> call, RequestPayload payload);
  // max_request_memory and max_inflight_message_memory for the opened request bytes. false:
  // *code and *error_text say why (EREQUEST, ELIMIT).
  bool AdmitMessageMemory(memory::SerializedMessage& bytes, int* code, std::string* error_text);
  // ServerOptions::interceptors, on the handler's fiber. false: one refused the call, which was
  // answered and deleted.
  bool Intercept();
  // The fiber's body: takes `*arg` (a HandlerStart*: the call and its FiberShares ticket, held
  // until the fiber ends) and runs the handler.
  struct HandlerStart;
  static void RunHandler(void* arg);
  // internal::CancelSource
  bool IsCanceled() const override;
  void NotifyOnCancel(google::protobuf::Closure* callback) override;
  std::chrono::steady_clock::time_point deadline() const noexcept;

  // Destroyed bottom-up: the pair goes back to its strategy before the state that keeps the
  // strategy alive can go.
  std::shared_ptr<ServerState> state_;
  // Settled by Run() once the reply is queued, else as the call is destroyed (every other end:
  // an error answered, a call dropped), after its messages went back to their strategy.
  AdmissionTicket ticket_;
  std::shared_ptr<net::Connection> connection_;
  CancelRegistry* const cancels_;
  std::shared_ptr<FiberShares::Connection> fiber_share_;  // moved into the fiber's ticket
  ReplySink* const sink_;
  MethodEntry* method_;
  const int64_t correlation_id_;
  const std::chrono::steady_clock::time_point start_;  // request read off the socket
  std::chrono::steady_clock::time_point started_;       // taken off the queue by a thread
  std::unique_ptr<AuthContext> auth_context_;
  Controller controller_;
  // Given back after the pair below is released (members are destroyed bottom-up).
  memory::MessageMemoryBudget::Charge memory_charge_;
  uint64_t request_wire_size_ = 0;  // the opened request's bytes, for RequestMemoryGate::Observe
  util::ThreadCpuTimer cpu_timer_;  // started on sampled calls: their CPU goes to /memory
  bool too_large_ = false;
  bool reply_ok_ = false;        // OnReplyPacked()'s `ok`
  uint64_t queued_before_ = 0;   // the connection's queued bytes before the reply (rpcz)
  std::shared_ptr<MethodBinding> binding_;     // outlives pair_, which goes back to it
  memory::MessagePair pair_;                   // moved into retained_ by RetainMessages()
  std::shared_ptr<RetainedMessages> retained_;
  // Set up by the first NotifyOnCancel() (guarded by cancel_mutex_); most calls never ask, so
  // it is one pointer here (ServerCall stays in glibc's small sizes, see server_call.cc).
  struct CancelWatch {
    std::shared_ptr<CancelState> state;
    uint64_t token = 0;                                   // in cancels_
    std::unique_ptr<asio::steady_timer> deadline_timer;  // its handler holds only a weak_ptr
  };
  std::mutex cancel_mutex_;
  std::unique_ptr<CancelWatch> cancel_;
};

}  // namespace arenarpc::server
