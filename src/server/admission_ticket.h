#pragma once
// AdmissionTicket: what an admitted call or task owes Admission, as an object. Admit() counts a
// unit in flight (Admission::TryAdmit()); the ticket it returns moves with the unit (into the
// backlog, onto a thread, into the reply) and settles exactly once: Settle() once the reply is
// queued, or its destructor when the unit is dropped or answered on the way.
// While the unit waits in a connection's backlog the ticket also holds its place in the server's
// queue (max_queued_requests), given back by TakenByThread() or by the settlement.

#include <chrono>
#include <utility>

#include "server/admission.h"

namespace arenarpc::server {

class AdmissionTicket {
 public:
  AdmissionTicket() = default;  // holds nothing

  // Admission::TryAdmit(): a ticket that holds the unit's place in flight when *verdict is
  // kAdmitted, else one that holds nothing.
  static AdmissionTicket Admit(Admission& admission, std::chrono::milliseconds timeout,
                               Admission::Verdict* verdict) {
    *verdict = admission.TryAdmit(timeout);
    return *verdict == Admission::Verdict::kAdmitted ? AdmissionTicket(&admission)
                                                     : AdmissionTicket();
  }
  AdmissionTicket(AdmissionTicket&& other) noexcept
      : admission_(std::exchange(other.admission_, nullptr)),
        queued_(std::exchange(other.queued_, false)) {}
  AdmissionTicket& operator=(AdmissionTicket&& other) noexcept {
    if (this != &other) {
      Settle();
      admission_ = std::exchange(other.admission_, nullptr);
      queued_ = std::exchange(other.queued_, false);
    }
    return *this;
  }
  AdmissionTicket(const AdmissionTicket&) = delete;
  AdmissionTicket& operator=(const AdmissionTicket&) = delete;
  ~AdmissionTicket() { Settle(); }

  explicit operator bool() const noexcept { return admission_ != nullptr; }

  // The unit waits in a connection's backlog for a thread.
  void Queued() {
    if (admission_ == nullptr || queued_) return;
    admission_->Queued();
    queued_ = true;
  }
  // A thread took the unit at `now`, `waited` after its request was read: a method call's wait
  // feeds the queue-wait estimate and the standing-queue test.
  void TakenByThread(std::chrono::steady_clock::time_point now, std::chrono::nanoseconds waited) {
    if (!queued_) return;
    queued_ = false;
    admission_->Dequeued(now, waited);
  }
  // ... other work (a page): its wait is not a method call's.
  void TakenByThread() {
    if (!queued_) return;
    queued_ = false;
    admission_->Dequeued();
  }
  // The unit's reply is queued, or it was dropped: it is no longer in flight. Once; later calls
  // (and the destructor) do nothing.
  void Settle() {
    if (admission_ == nullptr) return;
    if (queued_) admission_->Dequeued();  // dropped from the backlog: not a measured wait
    queued_ = false;
    std::exchange(admission_, nullptr)->Finish();
  }

 private:
  explicit AdmissionTicket(Admission* admission) : admission_(admission) {}

  Admission* admission_ = nullptr;
  bool queued_ = false;
};

}  // namespace arenarpc::server
