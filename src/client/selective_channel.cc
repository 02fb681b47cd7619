#include "arenarpc/selective_channel.h"

#include <cerrno>
#include <chrono>
#include <string>
#include <utility>

#include "arenarpc/controller.h"
#include "arenarpc/error_codes.h"
#include "call/controller_access.h"
#include "client/fanout_support.h"

namespace arenarpc {
namespace {

using Clock = std::chrono::steady_clock;

// Failures that mean the sub-channel did not run the request: safe to send it elsewhere.
bool RequestNotRun(int code) noexcept {
  switch (code) {
    case ECONNREFUSED:
    case ETIMEDOUT:
    case EHOSTDOWN:
    case ENETUNREACH:
    case EOVERCROWDED:
    case ELOGOFF:
    case ELIMIT:
      return true;
    default:
      return false;
  }
}

// One call; each attempt uses a fresh sub-controller and writes into the caller's response.
class SelectiveCall : public std::enable_shared_from_this<SelectiveCall> {
 public:
  SelectiveCall(std::vector<google::protobuf::RpcChannel*> order, const ChannelOptions& options,
                const google::protobuf::MethodDescriptor* method, Controller* controller,
                const google::protobuf::Message* request, google::protobuf::Message* response,
                google::protobuf::Closure* done)
      : order_(std::move(order)),
        options_(options),
        method_(method),
        controller_(controller),
        request_(request),
        response_(response),
        done_(done) {
    timeout_ms_ = controller->timeout_ms() > 0 ? controller->timeout_ms() : options.timeout_ms;
    max_retry_ = controller->max_retry() >= 0 ? controller->max_retry() : options.max_retry;
    if (timeout_ms_ > 0) deadline_ = start_ + std::chrono::milliseconds(timeout_ms_);
  }

  void Run() {
    Attempt();
    if (done_ == nullptr) latch_.Wait();
  }

 private:
  class AttemptDone final : public google::protobuf::Closure {
   public:
    explicit AttemptDone(std::shared_ptr<SelectiveCall> call) : call_(std::move(call)) {}
    void Run() override {
      std::shared_ptr<SelectiveCall> call = std::move(call_);
      delete this;
      call->OnAttemptDone();
    }

   private:
    std::shared_ptr<SelectiveCall> call_;
  };

  void Attempt() {
    attempt_ = std::make_unique<Controller>();
    attempt_->set_log_id(controller_->log_id());
    if (controller_->has_request_code()) attempt_->set_request_code(controller_->request_code());
    attempt_->request_attachment().AppendShared(controller_->request_attachment());
    attempt_->set_request_compress_type(controller_->request_compress_type());
    if (deadline_ != Clock::time_point::max()) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
      attempt_->set_timeout_ms(std::max<int64_t>(left, 1));
    }
    // The next sub-channel in this call's order: every one once, then around again.
    google::protobuf::RpcChannel* sub = order_[attempts_++ % order_.size()];
    sub->CallMethod(method_, attempt_.get(), request_, response_,
                    new AttemptDone(shared_from_this()));
  }

  void OnAttemptDone() {
    const int code = attempt_->ErrorCode();
    if (attempt_->Failed() && retries_ < max_retry_ && Clock::now() < deadline_) {
      RetryContext context;
      context.error_code = code;
      context.error_text = attempt_->ErrorText();
      context.request_sent = !RequestNotRun(code);
      context.cluster = true;
      context.retries_so_far = retries_;
      const bool retry = code != ERPCTIMEDOUT && code != ECANCELED &&
                         (options_.retry_policy != nullptr ? options_.retry_policy->DoRetry(context)
                                                           : !context.request_sent);
      if (retry) {
        ++retries_;
        Attempt();
        return;
      }
    }
    if (attempt_->Failed()) {
      controller_->SetFailed(code, attempt_->ErrorText());
    } else {
      controller_->response_attachment() = std::move(attempt_->response_attachment());
      controller_->set_response_compress_type(attempt_->response_compress_type());
    }
    internal::ControllerAccess::set_remote_side(*controller_, attempt_->remote_side());
    internal::ControllerAccess::set_retried_count(*controller_, retries_);
    internal::ControllerAccess::set_latency_us(
        *controller_,
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start_).count());
    if (done_ != nullptr) {
      done_->Run();
    } else {
      latch_.Release();
    }
  }

  const std::vector<google::protobuf::RpcChannel*> order_;
  const ChannelOptions& options_;
  const google::protobuf::MethodDescriptor* const method_;
  Controller* const controller_;
  const google::protobuf::Message* const request_;
  google::protobuf::Message* const response_;
  google::protobuf::Closure* const done_;
  const Clock::time_point start_ = Clock::now();
  Clock::time_point deadline_ = Clock::time_point::max();
  int64_t timeout_ms_ = -1;
  int max_retry_ = 0;
  // Touched by one attempt at a time (the next starts from the previous one's done).
  std::unique_ptr<Controller> attempt_;
  size_t attempts_ = 0;
  int retries_ = 0;
  client::CompletionLatch latch_;
};

}  // namespace

SelectiveChannel::SelectiveChannel() = default;
SelectiveChannel::~SelectiveChannel() = default;

int SelectiveChannel::Init(const char* lb_name, const ChannelOptions* options) {
  if (initialized_) {
    last_error_ = "SelectiveChannel is already initialized";
    return -1;
  }
  if (lb_name != nullptr && *lb_name != '\0' && std::string(lb_name) != "rr") {
    last_error_ = "load balancer \"" + std::string(lb_name) + "\" is not supported (\"rr\")";
    return -1;
  }
  options_ = options != nullptr ? *options : ChannelOptions{};
  if ((options_.timeout_ms <= 0 && options_.timeout_ms != -1) || options_.max_retry < 0) {
    last_error_ = "invalid ChannelOptions: timeout_ms=" + std::to_string(options_.timeout_ms) +
                  " (expected > 0 or -1), max_retry=" + std::to_string(options_.max_retry) +
                  " (expected >= 0)";
    return -1;
  }
  initialized_ = true;
  last_error_.clear();
  return 0;
}

int SelectiveChannel::AddChannel(google::protobuf::RpcChannel* sub_channel, ChannelHandle* handle) {
  if (sub_channel == nullptr || started_) {
    last_error_ = sub_channel == nullptr ? "AddChannel(nullptr)"
                                         : "AddChannel after the first call";
    return -1;
  }
  subs_.emplace_back(sub_channel);
  if (handle != nullptr) *handle = subs_.size() - 1;
  return 0;
}

void SelectiveChannel::CallMethod(const google::protobuf::MethodDescriptor* method,
                                  google::protobuf::RpcController* rpc_controller,
                                  const google::protobuf::Message* request,
                                  google::protobuf::Message* response,
                                  google::protobuf::Closure* done) {
  started_ = true;
  auto* controller = dynamic_cast<Controller*>(rpc_controller);
  if (controller == nullptr || !initialized_) {
    client::FailFanoutCall(rpc_controller, EINVAL,
                           "SelectiveChannel needs Init() and an arenarpc::Controller", done);
    return;
  }
  if (subs_.empty()) {
    client::FailFanoutCall(rpc_controller, EHOSTDOWN, "SelectiveChannel has no sub channel", done);
    return;
  }
  // Round robin: this call starts at the next sub-channel and goes on from there.
  const size_t first = next_.fetch_add(1, std::memory_order_relaxed) % subs_.size();
  std::vector<google::protobuf::RpcChannel*> order;
  order.reserve(subs_.size());
  for (size_t i = 0; i < subs_.size(); ++i) order.push_back(subs_[(first + i) % subs_.size()].get());
  std::make_shared<SelectiveCall>(std::move(order), options_, method, controller, request, response,
                                  done)
      ->Run();
}

}  // namespace arenarpc
