#include "arenarpc/parallel_channel.h"

#include <cerrno>
#include <chrono>
#include <mutex>
#include <utility>

#include "arenarpc/controller.h"
#include "arenarpc/error_codes.h"
#include "call/controller_access.h"
#include "client/fanout_support.h"

namespace arenarpc {
namespace {

using Clock = std::chrono::steady_clock;

// One call across the sub-channels; lives until its last sub-call's done ran.
class ParallelCall : public std::enable_shared_from_this<ParallelCall> {
 public:
  struct Sub {
    Sub(google::protobuf::RpcChannel* channel, SubCall call, ResponseMerger* merger, int index)
        : channel(channel), call(call), merger(merger), index(index) {}
    google::protobuf::RpcChannel* const channel;
    const SubCall call;
    ResponseMerger* const merger;
    const int index;  // sub-channel index
    Controller controller;
  };

  ParallelCall(Controller* controller, google::protobuf::Message* response,
               google::protobuf::Closure* done)
      : controller_(controller), response_(response), done_(done) {}
  ~ParallelCall() {
    // brpc's SubCall flags: what the CallMapper allocated for the sub-call is deleted with it.
    for (auto& sub : subs_) {
      if (sub->call.flags & SubCall::DELETE_REQUEST) delete sub->call.request;
      if (sub->call.flags & SubCall::DELETE_RESPONSE) delete sub->call.response;
    }
  }

  std::vector<std::unique_ptr<Sub>>& subs() { return subs_; }

  // Starts every sub-call; returns once the call completed if it is synchronous.
  void Run(int fail_limit, int64_t timeout_ms) {
    fail_limit_ = fail_limit;
    remaining_ = static_cast<int>(subs_.size());
    for (auto& sub : subs_) {
      sub->controller.set_log_id(controller_->log_id());
      if (controller_->has_request_code()) sub->controller.set_request_code(controller_->request_code());
      if (timeout_ms > 0) sub->controller.set_timeout_ms(timeout_ms);
      call_ids_.push_back(sub->controller.call_id());
    }
    auto self = shared_from_this();  // kept by every sub-call's closure
    for (auto& sub : subs_) {
      sub->channel->CallMethod(sub->call.method, &sub->controller, sub->call.request,
                               sub->call.response, new SubDone(self, sub.get()));
    }
    // A sub-call that failed while the others were being started may have reached the limit.
    bool cancel = false;
    {
      std::lock_guard lock(mutex_);
      cancel = failed_ >= fail_limit_ && remaining_ > 0;
    }
    if (cancel) CancelUnfinished();
    if (done_ == nullptr) latch_.Wait();
  }

 private:
  class SubDone final : public google::protobuf::Closure {
   public:
    SubDone(std::shared_ptr<ParallelCall> call, Sub* sub) : call_(std::move(call)), sub_(sub) {}
    void Run() override {
      std::shared_ptr<ParallelCall> call = std::move(call_);
      Sub* sub = sub_;
      delete this;
      call->OnSubDone(sub);
    }

   private:
    std::shared_ptr<ParallelCall> call_;
    Sub* sub_;
  };

  void OnSubDone(Sub* sub) {
    bool cancel = false, last = false;
    {
      std::lock_guard lock(mutex_);
      if (sub->controller.Failed() && ++failed_ == fail_limit_) cancel = true;
      last = --remaining_ == 0;
    }
    if (cancel && !last) CancelUnfinished();
    if (last) Complete();
  }

  void CancelUnfinished() {
    for (CallId id : call_ids_) StartCancel(id);  // no-op for sub-calls that completed
  }

  // Every sub-call ended: merge or fail, then hand the call back (done, or wake the waiter).
  void Complete() {
    const auto total = static_cast<int>(subs_.size());
    int failed;
    {
      std::lock_guard lock(mutex_);  // Run() may still look at failed_
      failed = failed_;
    }
    if (failed < fail_limit_) {
      response_->Clear();
      for (auto& sub : subs_) {
        if (sub->controller.Failed()) continue;
        const ResponseMerger::Result result =
            sub->merger != nullptr ? sub->merger->Merge(response_, sub->call.response)
                                   : (response_->MergeFrom(*sub->call.response),
                                      ResponseMerger::MERGED);
        if (result == ResponseMerger::FAIL_ALL) {
          controller_->SetFailed(ERESPONSE, "[E" + std::to_string(ERESPONSE) +
                                                "]Fail to merge response of sub channel " +
                                                std::to_string(sub->index));
          break;
        }
        if (result == ResponseMerger::FAIL) {
          sub->controller.SetFailed(ERESPONSE, "[E" + std::to_string(ERESPONSE) +
                                                   "]merger failed this sub call");
          ++failed;
        }
      }
    }
    if (failed >= fail_limit_ && !controller_->Failed()) {
      std::string text = "[E" + std::to_string(ETOOMANYFAILS) + "]" + std::to_string(failed) +
                         "/" + std::to_string(total) + " channels failed, fail_limit=" +
                         std::to_string(fail_limit_);
      for (auto& sub : subs_) {
        if (sub->controller.Failed()) {
          text += " [C" + std::to_string(sub->index) + "]" + sub->controller.ErrorText();
        }
      }
      controller_->SetFailed(ETOOMANYFAILS, std::move(text));
    }
    internal::ControllerAccess::set_latency_us(
        *controller_,
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start_).count());
    if (done_ != nullptr) {
      done_->Run();  // on the thread that completed the last sub-call
    } else {
      latch_.Release();
    }
  }

  Controller* const controller_;
  google::protobuf::Message* const response_;
  google::protobuf::Closure* const done_;
  const Clock::time_point start_ = Clock::now();
  std::vector<std::unique_ptr<Sub>> subs_;
  std::vector<CallId> call_ids_;
  int fail_limit_ = 0;
  client::CompletionLatch latch_;
  std::mutex mutex_;
  int failed_ = 0;
  int remaining_ = 0;
};

}  // namespace

ParallelChannel::ParallelChannel() = default;

ParallelChannel::~ParallelChannel() {
  for (Sub& sub : subs_) {
    if (sub.owned) delete sub.channel;
  }
}

int ParallelChannel::Init(const ParallelChannelOptions* options) {
  const ParallelChannelOptions chosen = options != nullptr ? *options : ParallelChannelOptions{};
  if (chosen.timeout_ms <= 0 && chosen.timeout_ms != -1) {
    last_error_ = "invalid ParallelChannelOptions: timeout_ms=" +
                  std::to_string(chosen.timeout_ms) + " (expected > 0 or -1)";
    return -1;
  }
  options_ = chosen;
  last_error_.clear();
  return 0;
}

template <class T>
std::shared_ptr<T> ParallelChannel::Adopt(T* object) {
  if (object == nullptr) return nullptr;
  for (const auto& adopted : adopted_) {
    if (adopted.get() == object) return std::static_pointer_cast<T>(adopted);
  }
  std::shared_ptr<T> owner(object);
  adopted_.push_back(owner);
  return owner;
}

int ParallelChannel::AddChannel(google::protobuf::RpcChannel* sub_channel,
                                ChannelOwnership ownership, CallMapper* mapper,
                                ResponseMerger* merger) {
  if (sub_channel == nullptr || started_) {
    last_error_ = sub_channel == nullptr ? "AddChannel(nullptr)"
                                         : "AddChannel after the first call";
    return -1;
  }
  subs_.push_back(Sub{sub_channel, ownership == OWNS_CHANNEL, Adopt(mapper), Adopt(merger)});
  return 0;
}

void ParallelChannel::CallMethod(const google::protobuf::MethodDescriptor* method,
                                 google::protobuf::RpcController* rpc_controller,
                                 const google::protobuf::Message* request,
                                 google::protobuf::Message* response,
                                 google::protobuf::Closure* done) {
  started_ = true;
  auto* controller = dynamic_cast<Controller*>(rpc_controller);
  if (controller == nullptr || method == nullptr || request == nullptr || response == nullptr) {
    client::FailFanoutCall(rpc_controller, EINVAL,
               "ParallelChannel needs an arenarpc::Controller, a method, a request and a response",
               done);
    return;
  }
  auto call = std::make_shared<ParallelCall>(controller, response, done);
  const int count = static_cast<int>(subs_.size());
  for (int i = 0; i < count; ++i) {
    const Sub& sub = subs_[i];
    SubCall mapped = sub.mapper != nullptr
                         ? sub.mapper->Map(i, count, method, request, response)
                         : SubCall(method, request, response->New(), SubCall::DELETE_RESPONSE);
    if (mapped.is_skip()) continue;
    if (mapped.is_bad() || mapped.method == nullptr || mapped.request == nullptr ||
        mapped.response == nullptr) {
      client::FailFanoutCall(controller, EREQUEST, "CallMapper of sub channel " + std::to_string(i) + " failed",
                 done);
      return;
    }
    call->subs().push_back(
        std::make_unique<ParallelCall::Sub>(sub.channel, mapped, sub.merger.get(), i));
  }
  const int active = static_cast<int>(call->subs().size());
  if (active == 0) {
    client::FailFanoutCall(controller, ECANCELED, "every sub channel was skipped by its CallMapper", done);
    return;
  }
  const int fail_limit =
      options_.fail_limit <= 0 || options_.fail_limit > active ? active : options_.fail_limit;
  call->Run(fail_limit, controller->timeout_ms() > 0 ? controller->timeout_ms() : options_.timeout_ms);
}

}  // namespace arenarpc
