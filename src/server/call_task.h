#pragma once
// PendingCall: an admitted request waiting in its connection's backlog for a thread — a method
// call (ServerCall + its request bytes) or other admitted work (AdmittedTask: an HTTP built-in
// page). One that is destroyed without being started (its connection closed, its threads stopped
// first) still settles its admission.

#include <memory>

#include "server/admission_ticket.h"
#include "server/server_call.h"

namespace arenarpc::server {

// Work admitted like a call that is not a method call. Its admission ticket (Hold()) is settled by
// this base: its place in the queue when it starts, in flight when it is destroyed (after Run()
// queued its reply, or without running). Run() is on a fiber of its own, as a
// handler (a page that waits, /hotspots/cpu, suspends it and frees the thread), or on the calling
// thread when no fiber can be had.
class AdmittedTask {
 public:
  explicit AdmittedTask(std::shared_ptr<ServerState> state) : state_(std::move(state)) {}
  virtual ~AdmittedTask() = default;  // settles the ticket
  AdmittedTask(const AdmittedTask&) = delete;
  AdmittedTask& operator=(const AdmittedTask&) = delete;

  // The task's admission, queued for a thread.
  void Hold(AdmissionTicket ticket) { ticket_ = std::move(ticket); }

  // Runs `task` and destroys it once Run() returned.
  static void Start(std::unique_ptr<AdmittedTask> task);

 protected:
  virtual void Run() = 0;

 private:
  static void RunOnFiber(void* task);  // takes the std::unique_ptr<AdmittedTask>* it is given

  std::shared_ptr<ServerState> state_;
  AdmissionTicket ticket_;  // settled before the state that holds its Admission can go
};

struct PendingCall {
  PendingCall() = default;
  PendingCall(std::unique_ptr<ServerCall> c, RequestPayload p)
      : call(std::move(c)), payload(std::move(p)) {}
  PendingCall(std::unique_ptr<AdmittedTask> t, size_t request_size)
      : task(std::move(t)) {
    payload.request_size = request_size;
  }
  PendingCall(PendingCall&&) noexcept = default;
  PendingCall& operator=(PendingCall&&) noexcept = default;
  ~PendingCall() {
    if (call) ServerCall::Abandon(std::move(call), payload);
  }
  void Start() {
    if (task) return AdmittedTask::Start(std::move(task));
    ServerCall::Start(std::move(call), std::move(payload));
  }

  std::unique_ptr<ServerCall> call;
  RequestPayload payload;  // request_size only, for a task
  std::unique_ptr<AdmittedTask> task;
};

}  // namespace arenarpc::server
