#include "server/call_task.h"

#include <new>

#include "fiber/scheduler.h"
#include "server/server_runtime.h"

namespace arenarpc::server {

void AdmittedTask::Start(std::unique_ptr<AdmittedTask> task) {
  task->ticket_.TakenByThread();
  fiber::Scheduler& fibers = task->state_->runtime->fibers();
  if (fibers.TryReserve()) {
    try {
      fibers.RunReserved(&AdmittedTask::RunOnFiber, &task);
      return;
    } catch (const std::bad_alloc&) {  // no stack could be mapped: run it here
    }
  }
  task->Run();
}

void AdmittedTask::RunOnFiber(void* task) {
  // Runs before RunReserved() returns, while Start()'s `task` still exists.
  const std::unique_ptr<AdmittedTask> own = std::move(*static_cast<std::unique_ptr<AdmittedTask>*>(task));
  own->Run();
}

}  // namespace arenarpc::server
