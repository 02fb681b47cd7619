#include "server/cancel_state.h"

#include <utility>

namespace arenarpc::server {

void CancelState::Notify(google::protobuf::Closure* callback) {
  if (callback == nullptr) return;
  {
    std::lock_guard lock(mutex_);
    if (phase_ == Phase::kWaiting) {
      callbacks_.push_back(callback);
      return;
    }
  }
  callback->Run();
}

void CancelState::Fire() {
  std::unique_lock lock(mutex_);
  if (phase_ != Phase::kWaiting) {
    // A callback that ends the call (done->Run()) fires again from inside the run: don't wait.
    if (runner_ != std::this_thread::get_id()) {
      done_cv_.wait(lock, [this] { return phase_ == Phase::kDone; });
    }
    return;
  }
  phase_ = Phase::kRunning;
  runner_ = std::this_thread::get_id();
  std::vector<google::protobuf::Closure*> callbacks;
  callbacks.swap(callbacks_);
  lock.unlock();
  for (google::protobuf::Closure* callback : callbacks) callback->Run();
  lock.lock();
  phase_ = Phase::kDone;
  done_cv_.notify_all();
}

}  // namespace arenarpc::server
