#include "server/cancel_state.h"

#include <utility>

namespace arenarpc::server {

void CancelState::Notify(google::protobuf::Closure* callback) {
  if (callback == nullptr) return;
  {
    std::lock_guard lock(mutex_);
    if (!fired_) {
      callbacks_.push_back(callback);
      return;
    }
  }
  callback->Run();
}

void CancelState::Fire() {
  std::vector<google::protobuf::Closure*> callbacks;
  {
    std::lock_guard lock(mutex_);
    if (fired_) return;
    fired_ = true;
    callbacks.swap(callbacks_);
  }
  for (google::protobuf::Closure* callback : callbacks) callback->Run();
}

}  // namespace arenarpc::server
