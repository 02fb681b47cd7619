#pragma once
// What ParallelChannel and SelectiveChannel calls share: failing a call before any sub-call
// started, and a latch a synchronous call waits on.

#include <google/protobuf/service.h>

#include <mutex>
#include <string>

#include "arenarpc/controller.h"
#include "arenarpc/fiber.h"

namespace arenarpc::client {

// Fails the call with brpc's "[E<code>]text" (any RpcController) and runs done, if any, here.
inline void FailFanoutCall(google::protobuf::RpcController* controller, int code,
                           const std::string& text, google::protobuf::Closure* done) {
  if (auto* c = dynamic_cast<Controller*>(controller)) {
    c->SetFailed(code, "[E" + std::to_string(code) + "]" + text);
  } else if (controller != nullptr) {
    controller->SetFailed(text);
  }
  if (done != nullptr) done->Run();
}

// Released once; Wait() returns after that. On a fiber Wait() suspends it, not its thread.
class CompletionLatch {
 public:
  void Release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [this] { return released_; });
  }

 private:
  std::mutex mutex_;
  fiber::ConditionVariable cv_;
  bool released_ = false;
};

}  // namespace arenarpc::client
