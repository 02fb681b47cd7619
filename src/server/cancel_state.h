#pragma once
// CancelState: the NotifyOnCancel() callbacks of one server call, shared by the call and the
// triggers that may fire first (connection closed, deadline timer). Fire() runs them exactly
// once, outside the lock, on the thread that fired first — the trigger's on cancellation, the
// call's own when done->Run() finishes; a callback added after that runs at once in Notify().
// A Fire() that loses waits until the winner's callbacks returned (so the call's end does not
// destroy the controller under a running callback) — unless a callback itself ended the call.
// Created only when a handler calls NotifyOnCancel().

#include <google/protobuf/stubs/callback.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace arenarpc::server {

class CancelState {
 public:
  CancelState() = default;
  ~CancelState() { Fire(); }
  CancelState(const CancelState&) = delete;
  CancelState& operator=(const CancelState&) = delete;

  void Notify(google::protobuf::Closure* callback);
  void Fire();  // idempotent; returns once the callbacks have run

 private:
  enum class Phase { kWaiting, kRunning, kDone };

  std::mutex mutex_;
  std::condition_variable done_cv_;
  Phase phase_ = Phase::kWaiting;
  std::thread::id runner_;  // the thread running the callbacks (kRunning)
  std::vector<google::protobuf::Closure*> callbacks_;
};

}  // namespace arenarpc::server
