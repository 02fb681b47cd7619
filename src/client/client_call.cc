#include "client/client_call.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/service.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <utility>

#include "client/call_registry.h"
#include "client/channel_core.h"
#include "client/client_connection.h"
#include "client/connection_manager.h"
#include "call/controller_access.h"
#include "call/span_record.h"
#include "call/trace_propagation.h"
#include "protocol/compression.h"
#include "client/sub_channel.h"
#include "stream/stream.h"

namespace arenarpc::client {

ClientCall::ClientCall(std::shared_ptr<ChannelCore> core,
                       const google::protobuf::MethodDescriptor* method, Controller* controller,
                       google::protobuf::Message* response, google::protobuf::Closure* done)
    : core_(std::move(core)),
      method_(method),
      controller_(controller),
      response_(response),
      done_(done),
      call_id_(controller->call_id().value),
      deadline_timer_(core_->loops().Next()) {
  const ChannelOptions& options = core_->options();
  // Per-call overrides: a positive timeout, a non-negative retry count.
  timeout_ms_ = controller_->timeout_ms() > 0 ? controller_->timeout_ms() : options.timeout_ms;
  max_retry_ = controller_->max_retry() >= 0 ? controller_->max_retry() : options.max_retry;
  if (timeout_ms_ > 0) deadline_ = start_ + std::chrono::milliseconds(timeout_ms_);
}

ClientCall::~ClientCall() = default;

bool ClientCall::Prepare(const google::protobuf::Message& request, std::string credential) {
  int code = 0;
  std::string text;
  internal::InheritTrace(*controller_);  // a call made from a handler continues its trace
  span_ = internal::SampleClientSpan(start_);
  if (span_) {
    span_->SetTrace(controller_->trace());
    span_->Mark(SpanPhase::kStarted, start_);
  }
  request_ = core_->protocol().Prepare(
      RequestSource{*method_, request, *controller_, std::move(credential)}, *core_, &code, &text);
  if (request_) {
    if (span_) {
      span_->Mark(SpanPhase::kSerialized);
      span_->span().request_bytes = request_->payload_bytes();
      span_->span().request_compression = protocol::CompressTypeName(
          static_cast<int>(controller_->request_compress_type()));
    }
    return true;
  }
  FailLocked(code, text);  // not started: nothing else can see the call
  internal::ControllerAccess::set_remote_side(*controller_, core_->remote_side());
  if (span_) FinishSpanLocked(Clock::now());
  return false;
}

void ClientCall::Start() {
  std::unique_lock lock(mutex_);
  // Under mutex_: a StartCancel() that finds the call waits until the first attempt was issued.
  CallRegistry::Instance().Add(call_id_, shared_from_this());
  slot_ = core_->NextCallSlot();
  if (deadline_ != Clock::time_point::max()) {
    deadline_timer_.expires_at(deadline_);
    deadline_timer_.async_wait([self = shared_from_this()](const asio::error_code& error) {
      if (!error) self->OnDeadline();
    });
  }
  if (core_->needs_request_code() && !controller_->has_request_code()) {
    FailLocked(EINVAL, "the load balancer of " + core_->remote_side() +
                           " hashes Controller::set_request_code(), which this call did not set");
    CompleteLocked(lock);
    return;
  }
  const int64_t backup_ms = core_->options().backup_request_ms;
  if (backup_ms > 0 && core_->is_cluster() &&
      Clock::now() + std::chrono::milliseconds(backup_ms) < deadline_) {
    backup_timer_ = std::make_unique<asio::steady_timer>(deadline_timer_.get_executor());
    backup_timer_->expires_after(std::chrono::milliseconds(backup_ms));
    backup_timer_->async_wait([self = shared_from_this()](const asio::error_code& error) {
      if (!error) self->OnBackupTimer();
    });
  }
  IssueAttempt(lock, /*backup=*/false);
}

bool ClientCall::IssueAttempt(std::unique_lock<std::mutex>& lock, bool backup) {
  std::shared_ptr<SubChannel> server = core_->SelectServer(
      controller_->request_code(),
      std::span<const cluster::ServerLoad* const>(tried_.data(), tried_count_));
  if (backup) {
    const bool already_tried =
        server && std::find(tried_.begin(), tried_.begin() + tried_count_, server.get()) !=
                      tried_.begin() + tried_count_;
    if (!server || already_tried) return false;  // no other server to hedge on
  }
  if (!server) {
    if (active_count_ > 0) return false;  // the other attempt may still succeed
    FailLocked(EHOSTDOWN, core_->shutting_down()
                              ? "Channel to " + core_->remote_side() + " is shutting down"
                              : "no server of " + core_->remote_side() + " is in rotation");
    CompleteLocked(lock);
    return false;
  }
  if (tried_count_ < kMaxTried) {
    tried_[tried_count_++] = server.get();
  } else {
    tried_[attempts_ % kMaxTried] = server.get();
  }
  const int64_t correlation_id = MakeCorrelationId(slot_, attempts_++);
  AttemptFacts facts;
  facts.correlation_id = correlation_id;
  facts.deadline = deadline_;
  facts.authority = server->remote_side();
  PackedRequest request = request_->Pack(facts);

  std::shared_ptr<ClientConnection> connection = server->connections().Acquire();
  last_server_ = server;
  if (!connection) {  // the server was just closed (removed from the cluster, or shutdown)
    if (active_count_ > 0 || backup) return false;
    FailLocked(EFAILEDSOCKET, "Channel to " + server->remote_side() + " is shutting down");
    CompleteLocked(lock);
    return false;
  }
  server->CountSelected();
  Attempt& attempt = active_[active_count_++];
  if (core_->tracks_load()) {
    server->AttemptStarted();
    attempt.start = Clock::now();
  }
  attempt.correlation_id = correlation_id;
  attempt.server = std::move(server);
  attempt.connection = connection;
  // Submit only posts to the connection's loop: no callback into this call from inside it.
  connection->Submit(shared_from_this(), correlation_id, std::move(request));
  if (span_) span_->Mark(SpanPhase::kSent);
  return true;
}

int ClientCall::FindAttempt(int64_t correlation_id) const noexcept {
  for (int i = 0; i < active_count_; ++i) {
    if (active_[i].correlation_id == correlation_id) return i;
  }
  return -1;
}

void ClientCall::EndAttempt(int index, AttemptEnd how) noexcept {
  Attempt& attempt = active_[index];
  if (core_->tracks_load()) {
    attempt.server->AttemptEnded(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - attempt.start).count());
  }
  if (how != AttemptEnd::kAbandoned) attempt.server->OnAttemptOutcome(how == AttemptEnd::kFailed);
  if (index != active_count_ - 1) std::swap(attempt, active_[active_count_ - 1]);
  active_[--active_count_] = Attempt{};
}

void ClientCall::Wait() {
  std::unique_lock lock(mutex_);
  finished_cv_.wait(lock, [this] { return completed_; });
}

void ClientCall::WaitFinished() {
  std::unique_lock lock(mutex_);
  finished_cv_.wait(lock, [this] { return finished_; });
}

void ClientCall::Cancel() {
  std::unique_lock lock(mutex_);
  if (completed_) return;
  FailLocked(ECANCELED, "RPC call_id=" + std::to_string(call_id_) + " was canceled");
  CompleteLocked(lock);  // unlocks; abandons the attempts
}

void ClientCall::OnDeadline() {
  std::unique_lock lock(mutex_);
  if (completed_) return;
  FailLocked(ERPCTIMEDOUT, "Reached timeout=" + std::to_string(timeout_ms_) + "ms @" +
                               (last_server_ ? last_server_->remote_side() : core_->remote_side()));
  core_->counters().timeouts.fetch_add(1, std::memory_order_relaxed);
  // After the caller was told: the attempts are forgotten so that their replies are dropped.
  CompleteLocked(lock);
}

void ClientCall::OnBackupTimer() {
  std::unique_lock lock(mutex_);
  if (completed_ || active_count_ != 1 || Clock::now() >= deadline_) return;
  if (IssueAttempt(lock, /*backup=*/true)) {
    core_->counters().backup_requests.fetch_add(1, std::memory_order_relaxed);
  }
}

int ClientCall::ReplyAttempt(std::unique_lock<std::mutex>& lock, int64_t correlation_id) {
  const int index = completed_ ? -1 : FindAttempt(correlation_id);
  if (index < 0) {
    lock.unlock();
    core_->counters().dropped_responses.fetch_add(1, std::memory_order_relaxed);
    return -1;
  }
  last_server_ = active_[index].server;
  return index;
}

void ClientCall::OnReply(int64_t correlation_id, ClientReply& reply) {
  std::unique_lock lock(mutex_);
  const int index = ReplyAttempt(lock, correlation_id);
  if (index < 0) return;
  if (span_) {
    span_->Mark(SpanPhase::kReplyReceived);
    span_->span().response_bytes = reply.payload_bytes();
  }
  std::string text;
  if (const int code = reply.ServerError(&text); code != 0) {
    reply.ReadFailure(*controller_);  // the last failed attempt's, as its error is
    EndAttempt(index, AttemptEnd::kFailed);
    HandleAttemptFailure(lock, code, text, /*request_sent=*/true, /*server_replied=*/true);
    return;
  }
  EndAttempt(index, AttemptEnd::kOk);
  if (const int code = reply.ReadInto(*controller_, response_,
                                      core_->options().max_decompressed_size, &text);
      code != 0) {
    FailLocked(code, text);
  } else if (span_) {
    span_->Mark(SpanPhase::kParsed);
  }
  CompleteLocked(lock);
}

void ClientCall::OnAttemptFailed(int64_t correlation_id, int code, const std::string& text,
                                 bool request_sent) {
  std::unique_lock lock(mutex_);
  const int index = completed_ ? -1 : FindAttempt(correlation_id);
  if (index < 0) return;
  EndAttempt(index, AttemptEnd::kFailed);
  HandleAttemptFailure(lock, code, text, request_sent, /*server_replied=*/false);
}

void ClientCall::HandleAttemptFailure(std::unique_lock<std::mutex>& lock, int code,
                                      const std::string& text, bool request_sent,
                                      bool server_replied) {
  RetryContext context;
  context.error_code = code;
  context.error_text = text;
  context.request_sent = request_sent;
  context.server_replied = server_replied;
  context.cluster = core_->is_cluster();
  context.retries_so_far = retries_;
  const RetryPolicy* policy = core_->options().retry_policy;
  const bool retry = policy != nullptr ? policy->DoRetry(context) : DefaultDoRetry(context);
  if (retry && retries_ < max_retry_ && Clock::now() < deadline_ && !core_->shutting_down()) {
    ++retries_;
    core_->counters().retries.fetch_add(1, std::memory_order_relaxed);
    if (IssueAttempt(lock, /*backup=*/false) || completed_) return;
  }
  if (active_count_ > 0) return;  // a backup copy is still out: its outcome decides
  FailLocked(code, retries_ > 0 ? text + " (after " + std::to_string(retries_) + " retries)" : text);
  CompleteLocked(lock);
}

void ClientCall::FailLocked(int code, const std::string& text) {
  controller_->SetFailed(code, "[E" + std::to_string(code) + "]" + text);
}

void ClientCall::CompleteLocked(std::unique_lock<std::mutex>& lock) {
  completed_ = true;
  deadline_timer_.cancel();
  const Clock::time_point now = Clock::now();
  internal::ControllerAccess::set_latency_us(
      *controller_, std::chrono::duration_cast<std::chrono::microseconds>(now - start_).count());
  internal::ControllerAccess::set_remote_side(
      *controller_, last_server_ ? last_server_->remote_side() : core_->remote_side());
  internal::ControllerAccess::set_retried_count(*controller_, retries_);
  if (backup_timer_) backup_timer_->cancel();
  // Attempts still out (a backup's loser, or all of them after a timeout or a cancel) are
  // forgotten by their connections: a reply that still comes is dropped and counted.
  const bool timed_out = controller_->ErrorCode() == ERPCTIMEDOUT;
  while (active_count_ > 0) {
    if (auto connection = active_[active_count_ - 1].connection.lock()) {
      connection->Abandon(active_[active_count_ - 1].correlation_id, timed_out, start_, now);
    }
    // A timed-out attempt counts against its server; a backup's loser or a canceled one does not.
    EndAttempt(active_count_ - 1, timed_out ? AttemptEnd::kFailed : AttemptEnd::kAbandoned);
  }
  // Counted before the caller can see the outcome, so stats() read after a call includes it.
  if (controller_->Failed()) core_->counters().failed_calls.fetch_add(1, std::memory_order_relaxed);
  stream::OnClientCallEnd(*controller_);  // a stream the call did not connect fails with it
  if (span_) FinishSpanLocked(now);
  if (done_ == nullptr) {
    finished_ = true;
    finished_cv_.notify_all();  // waiters re-check completed_/finished_ under mutex_
    lock.unlock();
    CallRegistry::Instance().Remove(call_id_, this);
    return;
  }
  lock.unlock();
  // From here on the caller owns controller/response again: touch nothing of theirs.
  if (!core_->PostCallback([self = shared_from_this()] { self->RunDone(); })) RunDone();
}

void ClientCall::FinishSpanLocked(Clock::time_point now) {
  Span& span = span_->span();
  span.method = method_->full_name();
  span.protocol = std::string(core_->protocol().name());
  span.peer = controller_->remote_side();
  span.response_compression =
      protocol::CompressTypeName(static_cast<int>(controller_->response_compress_type()));
  if (controller_->Failed()) span_->SetError(controller_->ErrorCode(), controller_->ErrorText());
  span_->Finish(now);
  span_.reset();
}

void ClientCall::RunDone() {
  done_->Run();
  {
    std::lock_guard lock(mutex_);
    finished_ = true;
  }
  finished_cv_.notify_all();
  CallRegistry::Instance().Remove(call_id_, this);
}

}  // namespace arenarpc::client

namespace arenarpc {

bool DefaultDoRetry(const RetryContext& context) noexcept {
  // A full connection (EOVERCROWDED) is only worth another try on another server.
  if (!context.request_sent) return context.error_code != EOVERCROWDED || context.cluster;
  return context.cluster && context.server_replied &&
         (context.error_code == ELOGOFF || context.error_code == ELIMIT);
}

}  // namespace arenarpc
