#include "server/server_call.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/service.h>

#include <exception>

#include "arenarpc/error_codes.h"
#include "client/controller_access.h"
#include "protocol/frame_codec.h"
#include "protocol/meta_builder.h"
#include "protocol/payload_codec.h"
#include "server/error_reply.h"

namespace arenarpc::server {

// A pair kept alive by RetainMessages() handles. The binding (strategy + prototypes) outlives it.
struct ServerCall::RetainedMessages {
  std::shared_ptr<MethodBinding> binding;
  memory::MessagePair pair;
};

using internal::ControllerAccess;

ServerCall::ServerCall(std::shared_ptr<ServerState> state,
                       std::shared_ptr<net::Connection> connection, CancelRegistry* cancels,
                       MethodEntry* method, int64_t correlation_id,
                       std::chrono::steady_clock::time_point start)
    : state_(std::move(state)),
      connection_(std::move(connection)),
      cancels_(cancels),
      method_(method),
      correlation_id_(correlation_id),
      start_(start) {
  ControllerAccess::set_retain_hook(controller_, &ServerCall::RetainHook, this);
  ControllerAccess::set_cancel_source(controller_, this);
  ControllerAccess::set_local_side(controller_, &connection_->local_side());
}

ServerCall::~ServerCall() {
  std::shared_ptr<CancelState> cancel;
  {
    std::lock_guard lock(cancel_mutex_);
    if (!cancel_) return;
    cancel = std::move(cancel_);
  }
  cancels_->Remove(cancel_token_);
  deadline_timer_.reset();  // cancels the wait; its handler holds only a weak_ptr
  cancel->Fire();           // the call ended without being canceled (else a no-op)
}

std::chrono::steady_clock::time_point ServerCall::deadline() const noexcept {
  const int32_t budget_ms = controller_.deadline_hint_ms();
  return budget_ms < 0 ? std::chrono::steady_clock::time_point::max()
                       : start_ + std::chrono::milliseconds(budget_ms);
}

bool ServerCall::IsCanceled() const {
  return connection_->closed() || std::chrono::steady_clock::now() >= deadline();
}

void ServerCall::NotifyOnCancel(google::protobuf::Closure* callback) {
  std::shared_ptr<CancelState> cancel;
  {
    std::lock_guard lock(cancel_mutex_);
    if (!cancel_) {
      cancel_ = std::make_shared<CancelState>();
      const auto deadline = this->deadline();
      if (deadline != std::chrono::steady_clock::time_point::max()) {
        deadline_timer_ = std::make_unique<asio::steady_timer>(connection_->executor(), deadline);
        deadline_timer_->async_wait(
            [weak = std::weak_ptr<CancelState>(cancel_)](const asio::error_code& error) {
              if (error) return;
              if (auto state = weak.lock()) state->Fire();
            });
      }
      cancel_token_ = cancels_->Add(cancel_);  // fires at once if the connection already closed
    }
    cancel = cancel_;
  }
  if (IsCanceled()) cancel->Fire();  // already canceled: the callback runs now, on this thread
  cancel->Notify(callback);
}

std::shared_ptr<void> ServerCall::RetainHook(const Controller& controller) {
  auto* call = static_cast<ServerCall*>(ControllerAccess::retain_state(controller));
  if (!call->retained_) {
    // The messages stay where they are; only the ownership of the pair moves.
    call->retained_ = std::make_shared<RetainedMessages>(
        RetainedMessages{call->method_->binding, std::move(call->pair_)});
  }
  return call->retained_;
}

void ServerCall::Dequeue() { state_->queued.fetch_sub(1, std::memory_order_relaxed); }

void ServerCall::Abandon(std::unique_ptr<ServerCall> call, const RequestPayload& payload) {
  call->Dequeue();
  call->state_->FinishOne();
}

void ServerCall::Start(std::unique_ptr<ServerCall> call, RequestPayload payload) {
  call->started_ = std::chrono::steady_clock::now();
  call->Dequeue();
  const int64_t queued_us =
      std::chrono::duration_cast<std::chrono::microseconds>(call->started_ - call->start_).count();
  MethodEntry* method = call->method_;
  method->queue_latency.Record(queued_us);
  const int32_t timeout_ms = call->controller_.deadline_hint_ms();
  if (timeout_ms > 0 && call->started_ >= call->deadline()) {  // a timeout_ms of 0 sets none
    ServerState& state = *call->state_;
    state.counters.rejected_timed_out.fetch_add(1, std::memory_order_relaxed);
    method->CountRejected(ERPCTIMEDOUT);
    WriteErrorReply(*call->connection_, call->correlation_id_, ERPCTIMEDOUT,
                    "The request waited " + std::to_string(queued_us / 1000) +
                        "ms for a thread, past its timeout_ms=" + std::to_string(timeout_ms));
    state.FinishOne();
    return;
  }
  Execute(std::move(call), std::move(payload));
}

void ServerCall::Execute(std::unique_ptr<ServerCall> call, RequestPayload payload) {
  MethodEntry* method = call->method_;
  try {
    call->pair_ = method->binding->memory->Acquire();
  } catch (const std::exception& e) {
    method->CountRejected(EINTERNAL);
    WriteErrorReply(*call->connection_, call->correlation_id_, EINTERNAL,
                    "Fail to create the messages of " + method->full_name + ": " + e.what());
    call->state_->FinishOne();
    return;
  }
  std::string detail;
  memory::ParseResult parsed = memory::ParseResult::kInvalidBytes;
  {  // an inflated copy of a compressed payload goes before the handler runs
    protocol::PayloadBytes bytes;
    if (protocol::OpenPayload(payload.meta, payload.bytes, call->controller_.request_attachment(),
                              &bytes, &detail,
                              call->state_->options.max_body_size) &&
        (parsed = call->pair_.ParseRequest(bytes)) != memory::ParseResult::kOk) {
      detail = protocol::ParseFailureDetail(*call->pair_.request(), parsed);
    }
  }
  if (parsed != memory::ParseResult::kOk) {
    method->CountRejected(EREQUEST);
    WriteErrorReply(*call->connection_, call->correlation_id_, EREQUEST,
                    protocol::ParseFailureText("request", *call->pair_.request(), payload.meta,
                                               payload.request_size));
    call->state_->FinishOne();
    return;  // the half-filled pair goes back to its strategy with the call
  }
  payload.bytes.clear();  // the input pages can go back before the handler runs
  method->CountStarted();
  ServerCall* done = call.release();  // owned by the handler until done->Run()
  done->method_->service->CallMethod(method->descriptor, &done->controller_,
                                     done->pair_.request(), done->pair_.response(), done);
}

bool ServerCall::BuildReply(const google::protobuf::Message& response, net::BufferChain* frame) {
  int code = controller_.ErrorCode();
  std::string error_text;
  if (controller_.Failed()) {
    error_text = protocol::FormatErrorText(protocol::ServerIdentity(connection_->local_side()),
                                           code, controller_.ErrorText());
  } else {
    net::BufferChain payload;
    std::string error;
    const int compress_type = static_cast<int>(controller_.response_compress_type());
    protocol::PayloadFields fields;
    fields.compress_type = compress_type;
    fields.attachment_size = controller_.response_attachment().size();
    protocol::RpcMeta meta;
    if (protocol::SerializePayload(response, compress_type, &payload, &error, "response") &&
        protocol::BuildResponseMeta(correlation_id_, fields, payload,
                                    controller_.response_attachment(),
                                    &controller_.response_user_fields(), &meta, &error)) {
      protocol::EncodeFrame(meta, std::move(payload), std::move(controller_.response_attachment()),
                            frame);
      return true;
    }
    // A reply that cannot be serialized becomes an ERESPONSE failure (spec §5.4).
    code = ERESPONSE;
    error_text = protocol::FormatErrorText(protocol::ServerIdentity(connection_->local_side()),
                                           code, error);
  }
  protocol::RpcMeta meta;
  protocol::BuildErrorResponseMeta(correlation_id_, protocol::WireErrorCode(code), error_text,
                                   &controller_.response_user_fields(), &meta);
  protocol::EncodeFrame(meta, net::BufferChain(), net::BufferChain(), frame);
  return false;
}

void ServerCall::Run() {
  std::unique_ptr<ServerCall> self(this);
  const memory::MessagePair& pair = retained_ ? retained_->pair : pair_;
  const bool close = controller_.Failed() && controller_.ErrorCode() == ECLOSE;
  net::BufferChain frame;
  if (!close && !controller_.Failed()) pair.PrepareResponse();
  const bool ok = !close && BuildReply(*pair.response(), &frame);
  if (const google::protobuf::Arena* arena = pair.arena()) {
    method_->arena_bytes.fetch_add(arena->SpaceAllocated(), std::memory_order_relaxed);
    method_->arena_calls.fetch_add(1, std::memory_order_relaxed);
  }
  // Counted before the reply leaves, so a client that has its reply also sees its call counted.
  const auto now = std::chrono::steady_clock::now();
  if (state_->limiter) {
    using std::chrono::duration_cast, std::chrono::microseconds;
    state_->limiter->OnCallEnd(duration_cast<microseconds>(now.time_since_epoch()).count(),
                               duration_cast<microseconds>(now - started_).count(), ok);
  }
  method_->CountEnded(
      now, std::chrono::duration_cast<std::chrono::microseconds>(now - start_).count(),
      ok ? 0 : (controller_.Failed() ? controller_.ErrorCode() : ERESPONSE));
  if (close) {
    connection_->Close();  // the handler asked for it: no reply (spec §5.3)
  } else {
    connection_->Write(std::move(frame));
  }
  // After the write was queued: Stop() closes connections once nothing is in flight.
  state_->FinishOne();
  // `self` goes out of scope: the pair is released now, unless RetainMessages() handles remain.
}

}  // namespace arenarpc::server
