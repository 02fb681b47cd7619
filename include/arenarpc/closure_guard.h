#pragma once
// ClosureGuard (brpc's): runs a closure when the scope ends unless release()d, so that every
// return path of a handler sends its reply:
//
//   void Echo(RpcController* cntl, const Req* req, Resp* resp, Closure* done) {
//     arenarpc::ClosureGuard done_guard(done);
//     if (bad(req)) { cntl->SetFailed("bad request"); return; }   // done->Run() here
//     ...
//   }

#include <google/protobuf/stubs/callback.h>

#include <utility>

namespace arenarpc {

class ClosureGuard {
 public:
  ClosureGuard() noexcept = default;
  explicit ClosureGuard(google::protobuf::Closure* done) noexcept : done_(done) {}
  ~ClosureGuard() {
    if (done_ != nullptr) done_->Run();
  }
  ClosureGuard(const ClosureGuard&) = delete;
  ClosureGuard& operator=(const ClosureGuard&) = delete;

  // Runs the closure held so far (if any) and guards `done` instead.
  void reset(google::protobuf::Closure* done) {
    google::protobuf::Closure* previous = std::exchange(done_, done);
    if (previous != nullptr && previous != done) previous->Run();
  }
  // Stops guarding and returns the closure: the caller now has to run it (e.g. later, async).
  google::protobuf::Closure* release() noexcept { return std::exchange(done_, nullptr); }
  bool empty() const noexcept { return done_ == nullptr; }
  void swap(ClosureGuard& other) noexcept { std::swap(done_, other.done_); }

 private:
  google::protobuf::Closure* done_ = nullptr;
};

}  // namespace arenarpc
