#include "arenarpc/controller.h"

namespace arenarpc {

Controller::Controller() = default;
Controller::~Controller() = default;

void Controller::Reset() {
  error_code_ = 0;
  error_text_.clear();
  log_id_ = 0;
  request_id_.clear();
  trace_id_ = span_id_ = parent_span_id_ = 0;
  request_attachment_.clear();
  response_attachment_.clear();
  request_user_fields_.clear();
  response_user_fields_.clear();
  request_compress_ = response_compress_ = CompressType::kNone;
  remote_side_.clear();
  timeout_ms_ = -1;
  max_retry_ = -1;
  latency_us_ = 0;
  retried_count_ = 0;
  deadline_hint_ms_ = -1;
  retain_hook_ = nullptr;
  retain_state_ = nullptr;
}

void Controller::SetFailed(const std::string& reason) { SetFailed(-1, reason); }

void Controller::SetFailed(int error_code, std::string reason) {
  error_code_ = error_code == 0 ? -1 : error_code;
  if (!error_text_.empty()) error_text_ += ' ';  // brpc joins several failures with a space
  error_text_ += reason;
}

void Controller::NotifyOnCancel(google::protobuf::Closure* callback) {
  // No cancellation on the wire: the callback runs when the call ends, as "never cancelled".
  if (callback != nullptr) callback->Run();
}

}  // namespace arenarpc
