#include "server/call_task.h"

namespace arenarpc::server {

CallTask::~CallTask() {
  if (call_) ServerCall::Abandon(std::move(call_), payload_, queued_);
}

void CallTask::Run() { ServerCall::Start(std::move(call_), std::move(payload_), queued_); }

}  // namespace arenarpc::server
