#pragma once
// CallTask: an admitted request on its way to a thread — run inline by the connection that read
// it, or queued. Run() starts the call (ServerCall::Start); a task destroyed unrun (the server's
// threads stopped first) answers nothing but still settles the call's admission.

#include <memory>

#include "net/connection.h"
#include "server/server_call.h"

namespace arenarpc::server {

class CallTask final : public net::InputTask {
 public:
  CallTask(std::unique_ptr<ServerCall> call, RequestPayload payload)
      : call_(std::move(call)), payload_(std::move(payload)) {}
  ~CallTask() override;

  void set_queued() noexcept { queued_ = true; }
  void Run() override;

 private:
  std::unique_ptr<ServerCall> call_;
  RequestPayload payload_;
  bool queued_ = false;  // counted in ServerState::queued until it starts
};

}  // namespace arenarpc::server
