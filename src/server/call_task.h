#pragma once
// PendingCall: an admitted request waiting in its connection's backlog for a thread. One that is
// destroyed without being started (its threads stopped first) still settles its admission.

#include <memory>

#include "server/server_call.h"

namespace arenarpc::server {

struct PendingCall {
  PendingCall() = default;
  PendingCall(std::unique_ptr<ServerCall> c, RequestPayload p)
      : call(std::move(c)), payload(std::move(p)) {}
  PendingCall(PendingCall&&) noexcept = default;
  PendingCall& operator=(PendingCall&&) noexcept = default;
  ~PendingCall() {
    if (call) ServerCall::Abandon(std::move(call), payload);
  }
  void Start() { ServerCall::Start(std::move(call), std::move(payload)); }

  std::unique_ptr<ServerCall> call;
  RequestPayload payload;
};

}  // namespace arenarpc::server
