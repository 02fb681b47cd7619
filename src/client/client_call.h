#pragma once
// ClientCall: one RPC from CallMethod to completion, across its attempts.
//
// Ownership rule that keeps a finished call's memory safe: the caller's controller, response and
// done are touched only under mutex_ and only while completed_ is false. Whoever sets completed_
// (reply, timeout, connection failure, shutdown) finishes the call; every other path then sees
// completed_ and backs off. So a reply racing with the timeout is either parsed into the response
// before the caller hears of the failure, or dropped without touching it. The request is read only
// inside CallMethod (serialized once; retries resend those bytes).
//
// Attempts: the first, retries (each on a server this call has not tried yet, when the cluster
// has one) and at most one backup copy in flight beside the first (backup_request_ms). Each
// attempt has its own correlation id; the first reply of any active attempt completes the call
// and the others are abandoned (their replies are dropped and counted).

#include <asio/steady_timer.hpp>

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "arenarpc/buffer_chain.h"
#include "arenarpc/controller.h"
#include "arenarpc/fiber.h"
#include "client/client_protocol.h"
#include "cluster/server_load.h"

namespace google::protobuf {
class Closure;
class Message;
class MethodDescriptor;
}  // namespace google::protobuf

namespace arenarpc::internal {
class SpanRecord;
}  // namespace arenarpc::internal

namespace arenarpc::client {

class ChannelCore;
class ClientConnection;
class SubChannel;

class ClientCall : public std::enable_shared_from_this<ClientCall> {
 public:
  ClientCall(std::shared_ptr<ChannelCore> core, const google::protobuf::MethodDescriptor* method,
             Controller* controller, google::protobuf::Message* response,
             google::protobuf::Closure* done);
  ~ClientCall();
  ClientCall(const ClientCall&) = delete;
  ClientCall& operator=(const ClientCall&) = delete;

  // Caller thread, before Start(): serializes (and compresses) the request and builds the meta.
  // On failure the controller is failed (EREQUEST) and the call must not be started.
  // `credential`: a ClientInterceptor's; empty = ChannelOptions::auth's, if any.
  bool Prepare(const google::protobuf::Message& request, std::string credential = {});
  // Arms the deadline and sends the first attempt.
  void Start();
  // Synchronous calls: waits until the call completed (a fiber suspends, a thread blocks).
  void Wait();
  // Join(): waits until the call completed and its done (if any) returned.
  void WaitFinished();
  // StartCancel(): fails the call with ECANCELED unless it already completed. Any thread.
  void Cancel();

  // From a connection's loop thread. correlation_id tells which attempt the event belongs to;
  // events of an older attempt or of a completed call are ignored (a reply is counted as dropped).
  // `reply`: the server's, as the channel's protocol decoded it.
  void OnReply(int64_t correlation_id, ClientReply& reply);
  // request_sent: the kernel accepted the whole request, so it may have run; never retried then.
  void OnAttemptFailed(int64_t correlation_id, int code, const std::string& text,
                       bool request_sent);

 private:
  using Clock = std::chrono::steady_clock;

  struct Attempt {
    int64_t correlation_id = 0;
    std::shared_ptr<SubChannel> server;
    std::weak_ptr<ClientConnection> connection;
    Clock::time_point start;
  };
  static constexpr int kMaxActive = 2;   // the first attempt (or its retry) + one backup
  static constexpr int kMaxTried = 4;    // servers remembered to avoid on retries

  // Sends one more attempt to a server picked by the balancer. `backup`: only to a server not
  // tried yet, and never fails the call. Returns false if no attempt was issued.
  bool IssueAttempt(std::unique_lock<std::mutex>& lock, bool backup);
  // A reply's attempt: its index (last_server_ set), or -1 after unlocking and counting the reply
  // as dropped (the call completed, or the attempt was abandoned).
  int ReplyAttempt(std::unique_lock<std::mutex>& lock, int64_t correlation_id);
  // Index into active_ of the attempt with this id, or -1.
  int FindAttempt(int64_t correlation_id) const noexcept;
  enum class AttemptEnd { kOk, kFailed, kAbandoned };
  // Removes active_[index], feeding its latency and outcome to the server's statistics.
  void EndAttempt(int index, AttemptEnd how) noexcept;
  // An attempt failed (connection, or an error reply when server_replied): retry, wait for the
  // other active attempt, or fail the call. May unlock.
  void HandleAttemptFailure(std::unique_lock<std::mutex>& lock, int code, const std::string& text,
                            bool request_sent, bool server_replied);
  void OnDeadline();
  void OnBackupTimer();
  // Fails the call's controller; text gets brpc's "[E<code>]" prefix.
  void FailLocked(int code, const std::string& text);
  // Sets completed_, fills latency etc., wakes the waiter; runs done after unlocking (here, or on
  // the channel's callback threads).
  void CompleteLocked(std::unique_lock<std::mutex>& lock);
  // rpcz: the sampled call's span takes its facts and ends (under mutex_, before done runs).
  void FinishSpanLocked(Clock::time_point now);
  // Runs done (if any), then marks the call finished for Join() and unregisters it.
  void RunDone();

  const std::shared_ptr<ChannelCore> core_;
  const google::protobuf::MethodDescriptor* const method_;
  Controller* const controller_;
  google::protobuf::Message* const response_;
  google::protobuf::Closure* const done_;
  const uint64_t call_id_;
  const Clock::time_point start_ = Clock::now();
  Clock::time_point deadline_ = Clock::time_point::max();
  int64_t timeout_ms_ = -1;
  int max_retry_ = 0;

  std::mutex mutex_;
  // Synchronous calls and Join() wait on it: a waiting fiber suspends, a plain thread blocks.
  fiber::ConditionVariable finished_cv_;
  bool completed_ = false;
  bool finished_ = false;  // done returned (or there was none): Join() returns
  int retries_ = 0;     // retries issued
  int attempts_ = 0;    // attempts issued (correlation ids are slot:attempts_)
  uint32_t slot_ = 0;
  std::array<Attempt, kMaxActive> active_;
  int active_count_ = 0;
  std::array<const cluster::ServerLoad*, kMaxTried> tried_{};
  int tried_count_ = 0;
  std::shared_ptr<SubChannel> last_server_;  // of the latest attempt: the controller's remote_side
  // Serialized once by the channel's protocol (Prepare), packed for every attempt.
  std::unique_ptr<ClientRequest> request_;
  asio::steady_timer deadline_timer_;
  std::unique_ptr<asio::steady_timer> backup_timer_;  // cluster channels with backup_request_ms
  std::shared_ptr<internal::SpanRecord> span_;  // rpcz: set when the call is sampled
};

}  // namespace arenarpc::client
