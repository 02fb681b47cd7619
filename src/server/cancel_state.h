#pragma once
// CancelState: the NotifyOnCancel() callbacks of one server call, shared by the call and the
// triggers that may fire first (connection closed, deadline timer). Fire() runs them exactly
// once, outside the lock, on the thread that fired first — the trigger's on cancellation, the
// call's own when done->Run() finishes; a callback added after that runs at once in Notify().
// Created only when a handler calls NotifyOnCancel().

#include <google/protobuf/stubs/callback.h>

#include <mutex>
#include <vector>

namespace arenarpc::server {

class CancelState {
 public:
  CancelState() = default;
  ~CancelState() { Fire(); }
  CancelState(const CancelState&) = delete;
  CancelState& operator=(const CancelState&) = delete;

  void Notify(google::protobuf::Closure* callback);
  void Fire();  // idempotent

 private:
  std::mutex mutex_;
  bool fired_ = false;
  std::vector<google::protobuf::Closure*> callbacks_;
};

}  // namespace arenarpc::server
