#pragma once
// Controller: per-call state shared by caller and handler, brpc-style.
// Client: set timeout/log_id/attachment/compression before the call, read Failed()/ErrorCode()/
// latency/response attachment after. Server: the handler reads log_id/request_id/trace ids/
// attachment/user fields, and calls SetFailed() or sets the response attachment/compression.

#include <google/protobuf/service.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "arenarpc/error_codes.h"
#include "arenarpc/buffer_chain.h"

namespace arenarpc {

enum class CompressType : int { kNone = 0, kSnappy = 1, kGzip = 2, kZlib = 3 };

class Controller : public google::protobuf::RpcController {
 public:
  Controller();
  ~Controller() override;

  // --- google::protobuf::RpcController
  void Reset() override;
  bool Failed() const override { return error_code_ != 0; }
  std::string ErrorText() const override { return error_text_; }
  void StartCancel() override {}  // calls are not cancellable on the wire (spec §6.3)
  void SetFailed(const std::string& reason) override;  // code -1 -> EINTERNAL (2001) on the wire
  bool IsCanceled() const override { return false; }
  void NotifyOnCancel(google::protobuf::Closure* callback) override;

  // --- errors
  void SetFailed(int error_code, std::string reason);
  int ErrorCode() const noexcept { return error_code_; }

  // --- both sides
  int64_t log_id() const noexcept { return log_id_; }
  void set_log_id(int64_t id) noexcept { log_id_ = id; }
  const std::string& request_id() const noexcept { return request_id_; }
  void set_request_id(std::string id) { request_id_ = std::move(id); }
  int64_t trace_id() const noexcept { return trace_id_; }
  int64_t span_id() const noexcept { return span_id_; }
  int64_t parent_span_id() const noexcept { return parent_span_id_; }
  void set_trace(int64_t trace_id, int64_t span_id, int64_t parent_span_id) noexcept {
    trace_id_ = trace_id, span_id_ = span_id, parent_span_id_ = parent_span_id;
  }
  net::BufferChain& request_attachment() noexcept { return request_attachment_; }
  net::BufferChain& response_attachment() noexcept { return response_attachment_; }
  // user_fields (RpcMeta 9): request pairs reach the handler; pairs it sets return in the reply.
  std::map<std::string, std::string>& request_user_fields() { return request_user_fields_; }
  std::map<std::string, std::string>& response_user_fields() { return response_user_fields_; }
  CompressType request_compress_type() const noexcept { return request_compress_; }
  void set_request_compress_type(CompressType t) noexcept { request_compress_ = t; }
  CompressType response_compress_type() const noexcept { return response_compress_; }
  void set_response_compress_type(CompressType t) noexcept { response_compress_ = t; }
  // "ip:port" of the other side.
  const std::string& remote_side() const noexcept { return remote_side_; }
  void set_remote_side(std::string s) { remote_side_ = std::move(s); }

  // --- client side
  // Per-call overrides of ChannelOptions (-1 = use the channel's).
  void set_timeout_ms(int64_t ms) noexcept { timeout_ms_ = ms; }
  int64_t timeout_ms() const noexcept { return timeout_ms_; }
  void set_max_retry(int n) noexcept { max_retry_ = n; }
  int max_retry() const noexcept { return max_retry_; }
  int64_t latency_us() const noexcept { return latency_us_; }
  void set_latency_us(int64_t us) noexcept { latency_us_ = us; }
  int retried_count() const noexcept { return retried_count_; }
  void set_retried_count(int n) noexcept { retried_count_ = n; }

  // --- server side
  // The caller's remaining budget if it sent one (RpcRequestMeta.timeout_ms), else -1.
  int32_t deadline_hint_ms() const noexcept { return deadline_hint_ms_; }
  void set_deadline_hint_ms(int32_t ms) noexcept { deadline_hint_ms_ = ms; }
  // Two-phase completion: the returned handle keeps the call's request and response alive after
  // done->Run() has sent the response; they go back to their memory strategy when done->Run() has
  // run and every handle is gone. Only valid inside a server handler (else returns nullptr).
  std::shared_ptr<void> RetainMessages() const {
    return retain_hook_ ? retain_hook_(*this) : nullptr;
  }

  // Runtime use: installs the hook behind RetainMessages() and the state it reads.
  using RetainHook = std::shared_ptr<void> (*)(const Controller&);
  void set_retain_hook(RetainHook hook, void* state) noexcept {
    retain_hook_ = hook, retain_state_ = state;
  }
  void* retain_state() const noexcept { return retain_state_; }

 private:
  int error_code_ = 0;
  std::string error_text_;
  int64_t log_id_ = 0;
  std::string request_id_;
  int64_t trace_id_ = 0, span_id_ = 0, parent_span_id_ = 0;
  net::BufferChain request_attachment_, response_attachment_;
  std::map<std::string, std::string> request_user_fields_, response_user_fields_;
  CompressType request_compress_ = CompressType::kNone, response_compress_ = CompressType::kNone;
  std::string remote_side_;
  int64_t timeout_ms_ = -1;
  int max_retry_ = -1;
  int64_t latency_us_ = 0;
  int retried_count_ = 0;
  int32_t deadline_hint_ms_ = -1;
  RetainHook retain_hook_ = nullptr;
  void* retain_state_ = nullptr;
};

}  // namespace arenarpc
