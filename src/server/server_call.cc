#include "server/server_call.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/service.h>

#include <cerrno>
#include <exception>
#include <new>
#include <optional>
#include <string>

#include "arenarpc/error_codes.h"
#include "call/controller_access.h"
#include "call/interceptor_chain.h"
#include "call/span_record.h"
#include "call/trace_propagation.h"
#include "protocol/compression.h"
#include "protocol/payload_bytes.h"
#include "server/decoded_call.h"
#include "server/request_opener.h"
#include "stream/stream.h"
#include "util/sampling.h"

namespace arenarpc::server {
namespace {

constexpr uint32_t kSampleEvery = 16;  // calls whose CPU and held bytes /memory charts

}  // namespace

// Every call allocates one ServerCall. glibc serves requests of up to 1032 bytes from its
// per-thread cache; a larger one takes malloc's general path (and may consolidate its fast bins)
// on every call — measured at +2 to +5 % of a call's instructions when the object grew past it.
// And when that cache is empty for the size (a burst of calls in flight), a request above 1000
// bytes is a "large" one for glibc, which first consolidates its fast bins.
static_assert(sizeof(ServerCall) <= 1000, "ServerCall outgrew glibc's small request sizes");


// A pair kept alive by RetainMessages() handles. The binding (strategy + prototypes) outlives it.
struct ServerCall::RetainedMessages {
  std::shared_ptr<MethodBinding> binding;
  memory::MessagePair pair;
};

using internal::ControllerAccess;

struct ServerCall::HandlerStart {
  std::unique_ptr<ServerCall>* call;
  FiberShares::Ticket* ticket;
};

ServerCall::ServerCall(std::shared_ptr<ServerState> state, AdmissionTicket&& ticket,
                       std::shared_ptr<net::Connection> connection, CancelRegistry* cancels,
                       std::shared_ptr<FiberShares::Connection> fiber_share,
                       ReplySink* sink, MethodEntry* method, int64_t correlation_id,
                       std::chrono::steady_clock::time_point start)
    : state_(std::move(state)),
      ticket_(std::move(ticket)),
      connection_(std::move(connection)),
      cancels_(cancels),
      fiber_share_(std::move(fiber_share)),
      sink_(sink),
      method_(method),
      correlation_id_(correlation_id),
      start_(start) {
  ControllerAccess::set_retain_hook(controller_, &ServerCall::RetainHook, this);
  ControllerAccess::set_cancel_source(controller_, this);
  ControllerAccess::set_local_side(controller_, &connection_->local_side());
  if (auto span = internal::SampleSpan(SpanKind::kServer, start)) {
    span->Mark(SpanPhase::kReceived, start);
    span->Mark(SpanPhase::kAdmitted);
    ControllerAccess::span_handle(controller_) = std::move(span);
  }
}

ServerCall::~ServerCall() {
  // A call that ended without a reply of its own (an error answered, a call dropped).
  if (span() != nullptr) FinishSpan(nullptr, 0);
  std::unique_ptr<CancelWatch> cancel;
  {
    std::lock_guard lock(cancel_mutex_);
    if (!cancel_) return;
    cancel = std::move(cancel_);
  }
  cancels_->Remove(cancel->token);
  cancel->deadline_timer.reset();  // cancels the wait
  cancel->state->Fire();           // the call ended without being canceled (else a no-op)
}

std::chrono::steady_clock::time_point ServerCall::deadline() const noexcept {
  const int32_t budget_ms = controller_.deadline_hint_ms();
  return budget_ms < 0 ? std::chrono::steady_clock::time_point::max()
                       : start_ + std::chrono::milliseconds(budget_ms);
}

bool ServerCall::IsCanceled() const {
  return connection_->closed() || std::chrono::steady_clock::now() >= deadline() ||
         sink_->CallCanceled(correlation_id_);
}

void ServerCall::NotifyOnCancel(google::protobuf::Closure* callback) {
  std::shared_ptr<CancelState> cancel;
  {
    std::lock_guard lock(cancel_mutex_);
    if (!cancel_) {
      auto watch = std::make_unique<CancelWatch>();
      watch->state = std::make_shared<CancelState>();
      const auto deadline = this->deadline();
      if (deadline != std::chrono::steady_clock::time_point::max()) {
        watch->deadline_timer =
            std::make_unique<asio::steady_timer>(connection_->executor(), deadline);
        watch->deadline_timer->async_wait(
            [weak = std::weak_ptr<CancelState>(watch->state)](const asio::error_code& error) {
              if (error) return;
              if (auto state = weak.lock()) state->Fire();
            });
      }
      // Fires at once if the connection already closed.
      watch->token = cancels_->Add(watch->state);
      sink_->WatchCancel(correlation_id_, watch->state);
      cancel_ = std::move(watch);
    }
    cancel = cancel_->state;
  }
  if (IsCanceled()) cancel->Fire();  // already canceled: the callback runs now, on this thread
  cancel->Notify(callback);
}

void ServerCall::TakeRequest(CallFields&& fields) {
  controller_.set_log_id(fields.log_id);
  if (!fields.request_id.empty()) controller_.set_request_id(std::move(fields.request_id));
  if (fields.trace.valid()) controller_.set_trace(std::move(fields.trace));
  controller_.set_request_compress_type(static_cast<CompressType>(fields.request_compress_type));
  for (auto& [name, value] : fields.user_fields) {
    controller_.request_user_fields().emplace(std::move(name), std::move(value));
  }
  if (!fields.attachment.empty()) controller_.request_attachment() = std::move(fields.attachment);
  if (fields.stream_offer) {
    stream::OfferStream(controller_, fields.stream_offer->settings,
                        std::move(fields.stream_offer->host), method_->full_name);
  }
}

std::shared_ptr<void> ServerCall::RetainHook(const Controller& controller) {
  auto* call = static_cast<ServerCall*>(ControllerAccess::retain_state(controller));
  if (!call->retained_) {
    // The messages stay where they are; only the ownership of the pair moves.
    call->retained_ = std::make_shared<RetainedMessages>(
        RetainedMessages{call->binding_, std::move(call->pair_)});
  }
  return call->retained_;
}

void ServerCall::Abandon(std::unique_ptr<ServerCall> call, const RequestPayload& payload) {
  call->state_->counters.canceled_before_start.fetch_add(1, std::memory_order_relaxed);
  call->NoteError(ECANCELED, "never started: the connection closed first");
}

internal::SpanRecord* ServerCall::span() const noexcept { return ControllerAccess::span(controller_); }

void ServerCall::NoteError(int code, std::string_view text) {
  if (internal::SpanRecord* record = span()) record->SetError(code, text);
}

void ServerCall::FinishSpan(const memory::MessagePair* pair, uint64_t queued_before) {
  std::shared_ptr<internal::SpanRecord> record =
      std::move(ControllerAccess::span_handle(controller_));
  Span& span = record->span();
  span.method = method_->full_name;
  span.protocol = std::string(sink_->name());
  span.peer = connection_->remote_side();
  if (!record->trace().valid()) record->SetTrace(controller_.trace());
  if (binding_) span.memory_strategy = binding_->mode;
  if (pair != nullptr && *pair) {
    if (const std::optional<uint64_t> held = pair->held_bytes()) {
      span.message_bytes = *held;
      span.message_bytes_source = pair->arena() != nullptr ? "arena" : "strategy";
    } else {
      span.message_bytes = pair->request()->SpaceUsedLong() + pair->response()->SpaceUsedLong();
      span.message_bytes_source = "space_used";
    }
  }
  if (span.error_code == 0 && controller_.Failed()) {
    record->SetError(controller_.ErrorCode(), controller_.ErrorText());
  }
  const uint64_t queued_after = connection_->bytes_queued();
  if (pair == nullptr || queued_after <= queued_before) {
    record->Finish();
    return;
  }
  // The reply's bytes (with any queued beside them) leave later, on the writing thread.
  connection_->WatchWrites([record = std::move(record), queued_before, queued_after](
                               uint64_t written, bool closed) {
    const auto now = internal::SpanRecord::Clock::now();
    if (written > queued_before && !record->reached(SpanPhase::kFirstByteWritten)) {
      record->Mark(SpanPhase::kFirstByteWritten, now);
    }
    if (written >= queued_after) {
      record->Mark(SpanPhase::kLastByteWritten, now);
    } else if (!closed) {
      return false;
    } else {
      record->SetError(EFAILEDSOCKET, "the connection closed before the reply was written");
    }
    record->Finish(now);
    return true;
  });
}

void ServerCall::Start(std::unique_ptr<ServerCall> call, RequestPayload payload) {
  call->started_ = std::chrono::steady_clock::now();
  ServerState& state = *call->state_;
  call->ticket_.TakenByThread(call->started_, call->started_ - call->start_);
  const int64_t queued_us =
      std::chrono::duration_cast<std::chrono::microseconds>(call->started_ - call->start_).count();
  MethodEntry* method = call->method_;
  method->queue_latency.Record(queued_us);
  if (internal::SpanRecord* span = call->span()) {
    span->Mark(SpanPhase::kTakenByThread, call->started_);
    span->SetTrace(call->controller_.trace());
    span->span().request_bytes = payload.bytes.size();
    span->span().request_compression = protocol::CompressTypeName(payload.encoding.compress_type);
  }
  // Canceled while it waited (RST_STREAM, the connection closed): nobody takes its reply, so
  // its handler does not run (a rapid-reset client would otherwise keep the threads busy).
  if (call->connection_->closed() || call->sink_->CallCanceled(call->correlation_id_)) {
    state.counters.canceled_before_start.fetch_add(1, std::memory_order_relaxed);
    call->NoteError(ECANCELED, "canceled by the client before it started");
    // Settles the protocol's record of the call; the stream or connection is already gone.
    call->SendError({ECANCELED, "canceled by the client before it started"});
    return;
  }
  const int32_t timeout_ms = call->controller_.deadline_hint_ms();
  if (timeout_ms > 0 && call->started_ >= call->deadline()) {  // a timeout_ms of 0 sets none
    state.counters.rejected_timed_out.fetch_add(1, std::memory_order_relaxed);
    method->CountRejected(ERPCTIMEDOUT);
    const std::string text = "The request waited " + std::to_string(queued_us / 1000) +
                             "ms for a thread, past its timeout_ms=" + std::to_string(timeout_ms);
    call->NoteError(ERPCTIMEDOUT, text);
    call->SendError({ERPCTIMEDOUT, text});
    return;
  }
  Execute(std::move(call), std::move(payload));
}

void ServerCall::Execute(std::unique_ptr<ServerCall> call, RequestPayload payload) {
  MethodEntry* method = call->method_;
  if (util::OneIn(kSampleEvery)) call->cpu_timer_.Start();
  try {
    call->binding_ = method->Binding();
    call->pair_ = call->binding_->memory->Acquire();
  } catch (const std::exception& e) {
    method->CountRejected(EINTERNAL);
    const std::string text = "Fail to create the messages of " + method->full_name + ": " + e.what();
    call->NoteError(EINTERNAL, text);
    call->SendError({EINTERNAL, text});
    return;
  }
  std::string error_text;
  int error_code = EREQUEST;
  {  // an inflated (or converted) copy of the request goes before the handler runs
    protocol::PayloadBytes bytes;
    const RequestTarget target{call->controller_.request_attachment(),
                               call->binding_->memory->request_prototype(),
                               *method->request_memory};
    if (OpenRequest(target, payload, call->state_->config.options.max_body_size, &bytes,
                    &error_text, &call->too_large_) &&
        call->AdmitMessageMemory(bytes, &error_code, &error_text) &&
        call->pair_.ParseRequest(bytes) != memory::ParseResult::kOk) {
      error_text = ParseFailureText(target.prototype, payload);
    }
  }
  if (!error_text.empty()) {
    method->CountRejected(error_code);
    call->NoteError(error_code, error_text);
    call->SendError({error_code, error_text,
                     call->too_large_ ? ErrorCause::kRequestTooLarge : ErrorCause::kError});
    return;  // the half-filled pair goes back to its strategy with the call
  }
  payload.bytes.clear();  // the input pages can go back before the handler runs
  if (internal::SpanRecord* span = call->span()) span->Mark(SpanPhase::kParsed);
  ServerRuntime& runtime = *call->state_->runtime;
  fiber::Scheduler& fibers = runtime.fibers();
  std::string limit_text;
  FiberShares::Ticket ticket =
      runtime.fiber_shares().TryTake(std::move(call->fiber_share_),
                                     call->sink_->IsStreamCall(call->correlation_id_), &limit_text);
  if (ticket) {
    if (!fibers.TryReserve()) {
      limit_text = "Reached server's max_fibers=" + std::to_string(fibers.options().max_fibers);
    } else {
      try {
        HandlerStart start{&call, &ticket};
        fibers.RunReserved(&ServerCall::RunHandler, &start);
        return;
      } catch (const std::bad_alloc&) {  // no stack could be mapped; the handler did not start
        limit_text = "Fail to map a fiber stack of " +
                     std::to_string(fibers.options().stack_size) + " bytes";
      }
    }
  }
  ServerState& state = *call->state_;
  state.counters.rejected_fiber_limit.fetch_add(1, std::memory_order_relaxed);
  method->CountRejected(ELIMIT);
  call->NoteError(ELIMIT, limit_text);
  call->SendError({ELIMIT, limit_text, !ticket ? ErrorCause::kOverShare : ErrorCause::kError});
}

void ServerCall::RunHandler(void* arg) {
  // Runs before RunReserved() returns, while Execute()'s `call` and `ticket` still exist.
  auto* start = static_cast<HandlerStart*>(arg);
  const FiberShares::Ticket ticket = std::move(*start->ticket);  // given back as the fiber ends
  ServerCall* done = start->call->release();
  MethodEntry* method = done->method_;
  method->CountStarted();
  if (internal::SpanRecord* span = done->span()) {
    span->Mark(SpanPhase::kHandlerStarted);
    internal::SetHandlerSpan(ControllerAccess::span_handle(done->controller_));
  }
  // The handler's outgoing calls continue its trace (trace_context.h).
  if (done->controller_.trace().valid()) internal::SetHandlerTrace(done->controller_.trace());
  if (!done->state_->config.options.interceptors.empty() && !done->Intercept()) return;
  // `done` is owned by the handler until done->Run(), which may come from this fiber.
  method->service->CallMethod(method->descriptor, &done->controller_, done->pair_.request(),
                              done->pair_.response(), done);
}

bool ServerCall::Intercept() {
  std::string error_text;
  const int code = internal::RunServerInterceptors(
      state_->config.options.interceptors,
      InterceptedServerCall{*method_->descriptor, controller_, *pair_.request()}, &error_text);
  if (code == 0) return true;
  controller_.SetFailed(code, std::move(error_text));
  Run();  // answers the refusal like a failed handler's; deletes this call
  return false;
}

bool ServerCall::AdmitMessageMemory(memory::SerializedMessage& bytes, int* code,
                                    std::string* error_text) {
  request_wire_size_ = bytes.size();
  memory::RequestMemoryGate::Decision decision =
      method_->request_memory->Admit(bytes, state_->message_memory, &memory_charge_);
  switch (decision.verdict) {
    case memory::RequestMemoryGate::Verdict::kAdmitted:
      return true;
    case memory::RequestMemoryGate::Verdict::kTooLarge:
      too_large_ = true;
      *code = EREQUEST;
      break;
    case memory::RequestMemoryGate::Verdict::kOverBudget:
      *code = ELIMIT;
      break;
  }
  *error_text = std::move(decision.text);
  return false;
}

const memory::MessagePair& ServerCall::messages() const noexcept {
  return retained_ ? retained_->pair : pair_;
}

void ServerCall::Run() {
  std::unique_ptr<ServerCall> self(this);
  internal::SpanRecord* span = this->span();
  if (span != nullptr) span->Mark(SpanPhase::kHandlerEnded);
  const memory::MessagePair& pair = messages();
  const bool close = controller_.Failed() && controller_.ErrorCode() == ECLOSE;
  if (close) {
    CountEnded(false, 0);
    connection_->Close();  // the handler asked for it: no reply (spec §5.3)
  } else {
    if (!controller_.Failed()) pair.PrepareResponse();
    sink_->Reply(*connection_, *this, *pair.response());
  }
  if (span != nullptr) {
    if (!reply_ok_ && !controller_.Failed()) {
      span->SetError(ERESPONSE, "the response could not be packed");
    }
    FinishSpan(close ? nullptr : &pair, queued_before_);
  }
  // After the write was queued: Stop() closes connections once nothing is in flight.
  ticket_.Settle();
  if (!cpu_timer_.started()) return;  // `self` releases the pair (unless RetainMessages() holds it)
  // A sampled call is charged its CPU once its messages went back to their strategy.
  const std::shared_ptr<ServerState> state = state_;  // keeps the method entry alive
  MethodEntry* method = method_;
  const util::ThreadCpuTimer timer = cpu_timer_;
  self.reset();
  if (const std::optional<uint64_t> ns = timer.Elapsed()) {
    method->memory_series.RecordCpu(*ns, std::chrono::steady_clock::now());
  }
}

void ServerCall::OnReplyPacked(bool ok, const net::BufferChain& reply) {
  reply_ok_ = ok;
  CountEnded(ok, reply.size());
  internal::SpanRecord* span = this->span();
  if (span == nullptr) return;
  queued_before_ = connection_->bytes_queued();
  // Stamped as the reply is handed over: the write may finish, and the client see its reply,
  // before this thread runs again.
  span->Mark(SpanPhase::kReplyQueued);
}

void ServerCall::CountEnded(bool ok, size_t reply_bytes) {
  const memory::MessagePair& pair = messages();
  if (internal::SpanRecord* span = this->span()) {
    span->Mark(SpanPhase::kSerialized);
    span->span().response_bytes = reply_bytes;
    span->span().response_compression =
        protocol::CompressTypeName(static_cast<int>(controller_.response_compress_type()));
  }
  if (const google::protobuf::Arena* arena = pair.arena()) {
    method_->arena_bytes.fetch_add(arena->SpaceAllocated(), std::memory_order_relaxed);
    method_->arena_calls.fetch_add(1, std::memory_order_relaxed);
  }
  const uint64_t held = method_->request_memory->Observe(pair, request_wire_size_);
  if (ok) method_->presence->Observe(*pair.response());
  const auto now = std::chrono::steady_clock::now();
  if (held != 0 && (pair.arena() == nullptr || cpu_timer_.started())) {
    method_->memory_series.RecordHeld(held, now);
  }
  state_->admission.OnCallEnd(now, started_, ok);
  method_->CountEnded(
      now, std::chrono::duration_cast<std::chrono::microseconds>(now - start_).count(),
      ok ? 0 : (controller_.Failed() ? controller_.ErrorCode() : ERESPONSE));
}

}  // namespace arenarpc::server
