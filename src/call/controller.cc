#include "arenarpc/controller.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>

#include "call/cancel_source.h"
#include "call/client_cancel_hook.h"
#include "call/span_record.h"  // ~Controller destroys the span handle

namespace arenarpc {
namespace {

std::atomic<uint64_t> next_call_id{1};

}  // namespace

Controller::Controller() = default;
Controller::~Controller() = default;

void Controller::Reset() {
  error_code_ = 0;
  error_text_.clear();
  log_id_ = 0;
  request_id_.clear();
  trace_.reset();
  request_attachment_.clear();
  response_attachment_.clear();
  request_user_fields_.clear();
  response_user_fields_.clear();
  grpc_status_details_.clear();
  request_compress_ = response_compress_ = CompressType::kNone;
  remote_side_.clear();
  remote_side_of_ = nullptr;
  local_side_ = nullptr;
  tls_peer_ = nullptr;
  auth_context_ = nullptr;
  timeout_ms_ = -1;
  max_retry_ = -1;
  request_code_ = 0;
  has_request_code_ = false;
  latency_us_ = 0;
  retried_count_ = 0;
  call_id_.store(0, std::memory_order_relaxed);
  deadline_hint_ms_ = -1;
  retain_hook_ = nullptr;
  retain_state_ = nullptr;
  streams_.reset();
  span_.reset();
  sub_controllers_.clear();
  sub_calls_.reset();
}

const std::string& Controller::local_side() const noexcept {
  static const std::string kNone;
  return local_side_ != nullptr ? *local_side_ : kNone;
}

void Controller::SetFailed(const std::string& reason) { SetFailed(-1, reason); }

void Controller::SetFailed(int error_code, std::string reason) {
  error_code_ = error_code == 0 ? -1 : error_code;
  if (!error_text_.empty()) error_text_ += ' ';  // brpc joins several failures with a space
  error_text_ += reason;
}

void Controller::SetFailed(int error_code, const char* reason_fmt, ...) {
  std::string reason;
  if (reason_fmt != nullptr) {
    va_list args;
    va_start(args, reason_fmt);
    va_list again;
    va_copy(again, args);
    const int n = std::vsnprintf(nullptr, 0, reason_fmt, args);
    va_end(args);
    if (n > 0) {
      reason.resize(static_cast<size_t>(n) + 1);
      std::vsnprintf(reason.data(), reason.size(), reason_fmt, again);
      reason.resize(static_cast<size_t>(n));
    }
    va_end(again);
  }
  SetFailed(error_code, std::move(reason));
}

bool Controller::IsCanceled() const {
  return cancel_source_ != nullptr && cancel_source_->IsCanceled();
}

void Controller::NotifyOnCancel(google::protobuf::Closure* callback) {
  if (cancel_source_ != nullptr) {
    cancel_source_->NotifyOnCancel(callback);
  } else if (callback != nullptr) {
    callback->Run();  // a client controller is never canceled "server-side"
  }
}

CallId Controller::call_id() {
  uint64_t id = call_id_.load(std::memory_order_acquire);
  if (id != 0) return CallId{id};
  const uint64_t fresh = next_call_id.fetch_add(1, std::memory_order_relaxed);
  // Two threads asking at once agree on whichever id was stored first.
  if (call_id_.compare_exchange_strong(id, fresh, std::memory_order_acq_rel)) return CallId{fresh};
  return CallId{id};
}

namespace {
std::atomic<call::ClientCancelFunction> client_cancel{nullptr};
}  // namespace

void call::InstallClientCancel(ClientCancelFunction cancel) noexcept {
  client_cancel.store(cancel, std::memory_order_release);
}

void call::CancelClientCall(uint64_t call_id) noexcept {
  if (const auto cancel = client_cancel.load(std::memory_order_acquire)) cancel(call_id);
}

void Controller::StartCancel() { call::CancelClientCall(call_id().value); }

const TraceContext& Controller::NoTrace() noexcept {
  static const TraceContext none;
  return none;
}

void Controller::set_trace(TraceContext trace) {
  if (!trace.valid() && trace.span_id == 0 && trace.parent_span_id == 0) {
    trace_.reset();
  } else if (trace_) {
    *trace_ = std::move(trace);
  } else {
    trace_ = std::make_unique<TraceContext>(std::move(trace));
  }
}

void Controller::set_trace(int64_t trace_id, int64_t span_id, int64_t parent_span_id) {
  TraceContext trace;
  trace.trace_id = static_cast<uint64_t>(trace_id);
  trace.span_id = static_cast<uint64_t>(span_id);
  trace.parent_span_id = static_cast<uint64_t>(parent_span_id);
  set_trace(std::move(trace));
}

}  // namespace arenarpc
