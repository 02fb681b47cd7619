#pragma once
// Admission: the server-wide half of admitting a request (the connection's half — its backlog and
// unsent output — is ServerConnection's). Every admitted unit (a call, an HTTP page) passes
// TryAdmit() when it is decoded — stopping → ELOGOFF; max_queued_requests, a wait that would
// outlast the call's deadline (or, while the backlog stands, a few calls' wait:
// standing_queue.h) and max_concurrency → ELIMIT — and ends in exactly one Finish() once its
// reply is queued (or it is dropped); Stop() waits for the count to reach 0. Both go through
// the unit's AdmissionTicket (admission_ticket.h), which makes the "exactly one" a type's rule.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>

#include "arenarpc/max_concurrency.h"
#include "server/auto_concurrency_limiter.h"
#include "server/queue_wait_estimate.h"
#include "server/standing_queue.h"

namespace arenarpc::server {

class Admission {
 public:
  enum class Verdict {
    kAdmitted,
    kStopping,
    kQueueFull,
    kWaitPastDeadline,  // the predicted wait would take more than its share of the deadline
    kStandingQueue,     // ... or, while the backlog stands, more than StandingQueue::Bound()
    kOverLimit,
  };
  // Of a call's deadline, the share its predicted wait in the backlog may take: the rest is left
  // for the handler, the reply's way back and the estimate's error (the drain rate moves).
  static constexpr double kWaitShareOfDeadline = 0.5;

  // At Start(), before any request. `min_auto_limit`: the adaptive limit's floor.
  void Configure(const MaxConcurrency& max_concurrency, int max_queued_requests,
                 int min_auto_limit) {
    AutoConcurrencyLimiter::Options options;
    options.min_limit = min_auto_limit;
    limiter_.emplace(options);
    SetMaxConcurrency(max_concurrency);
    SetMaxQueuedRequests(max_queued_requests);
  }
  // Live settings: any time after Configure(), from any thread, while calls are admitted (the
  // callers serialize their changes). Calls already admitted stay admitted; the next TryAdmit()
  // sees the new bound. Switching to "auto" starts the adaptive limit over.
  void SetMaxConcurrency(const MaxConcurrency& max_concurrency) {
    if (max_concurrency.is_auto()) {
      if (fixed_limit_.load(std::memory_order_relaxed) != kAuto) limiter_->Reset();
      fixed_limit_.store(kAuto, std::memory_order_relaxed);
    } else {
      fixed_limit_.store(max_concurrency.fixed_limit(), std::memory_order_relaxed);
    }
  }
  void SetMaxQueuedRequests(int max_queued_requests) {
    max_queued_.store(max_queued_requests, std::memory_order_relaxed);
  }

  // A call ended (the adaptive limit learns from it); `ok`: it succeeded.
  void OnCallEnd(std::chrono::steady_clock::time_point now,
                 std::chrono::steady_clock::time_point started, bool ok) {
    if (fixed_limit_.load(std::memory_order_relaxed) != kAuto) return;
    using std::chrono::duration_cast, std::chrono::microseconds;
    limiter_->OnCallEnd(duration_cast<microseconds>(now.time_since_epoch()).count(),
                        duration_cast<microseconds>(now - started).count(), ok);
  }

  // From now on TryAdmit() answers kStopping. false: it already did.
  bool StartStopping() { return !stopping_.exchange(true, std::memory_order_acq_rel); }
  // Waits until nothing admitted is in flight, or `deadline`.
  void WaitIdle(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(idle_mutex_);
    idle_.wait_until(lock, deadline,
                     [&] { return in_flight_.load(std::memory_order_acquire) == 0; });
  }

  bool stopping() const { return stopping_.load(std::memory_order_acquire); }
  int limit() const {  // 0 = unlimited
    const int fixed = fixed_limit_.load(std::memory_order_relaxed);
    return fixed == kAuto ? limiter_->limit() : fixed;
  }
  bool is_auto() const { return fixed_limit_.load(std::memory_order_relaxed) == kAuto; }
  int max_queued_requests() const { return max_queued_.load(std::memory_order_relaxed); }
  int64_t in_flight() const { return in_flight_.load(std::memory_order_relaxed); }
  int64_t queued() const { return queued_.load(std::memory_order_relaxed); }
  // The wait a call admitted now would have before a thread takes it.
  std::chrono::nanoseconds predicted_wait() const { return wait_.Predict(queued()); }
  // The longest predicted wait admitted while the backlog stands.
  std::chrono::nanoseconds standing_bound() const { return StandingQueue::Bound(wait_.interval()); }

 private:
  // Counted only through AdmissionTicket, which settles each admitted unit exactly once.
  friend class AdmissionTicket;

  // kAdmitted: counted in flight; one Finish() is owed. `timeout`: the client's deadline, from
  // now (zero: none).
  Verdict TryAdmit(std::chrono::milliseconds timeout = std::chrono::milliseconds::zero()) {
    if (stopping_.load(std::memory_order_acquire)) return Verdict::kStopping;
    const int64_t queued = queued_.load(std::memory_order_relaxed);
    const int max_queued = max_queued_.load(std::memory_order_relaxed);
    if (max_queued > 0 && queued >= max_queued) return Verdict::kQueueFull;
    // A call that would reach a thread only past (most of) its deadline is refused now, while the
    // client can still try elsewhere, instead of timing out in the queue.
    if (timeout > std::chrono::milliseconds::zero() && queued > 0) {
      const std::chrono::nanoseconds wait = wait_.Predict(queued);
      if (wait > timeout * kWaitShareOfDeadline) return Verdict::kWaitPastDeadline;
      // A standing backlog is held to a few calls' wait: it would serve no more calls longer.
      if (wait > StandingQueue::Bound(wait_.interval()) &&
          standing_.standing(std::chrono::steady_clock::now())) {
        return Verdict::kStandingQueue;
      }
    }
    const int64_t now = in_flight_.fetch_add(1, std::memory_order_acq_rel) + 1;
    const int limit = this->limit();
    if (limit > 0 && now > limit) {
      Finish();
      return Verdict::kOverLimit;
    }
    return Verdict::kAdmitted;
  }
  // An admitted unit's reply was queued (or it was dropped).
  void Finish() {
    if (in_flight_.fetch_sub(1, std::memory_order_acq_rel) == 1 &&
        stopping_.load(std::memory_order_acquire)) {
      std::lock_guard lock(idle_mutex_);
      idle_.notify_all();
    }
  }
  // An admitted unit waits for a thread / was taken by one (max_queued_requests).
  void Queued() { queued_.fetch_add(1, std::memory_order_relaxed); }
  void Dequeued() { queued_.fetch_sub(1, std::memory_order_relaxed); }
  // ... taken by a thread at `now`, `waited` after its request was read (feeds the wait
  // estimate and the standing-queue test).
  void Dequeued(std::chrono::steady_clock::time_point now, std::chrono::nanoseconds waited) {
    wait_.OnDequeue(now, queued_.fetch_sub(1, std::memory_order_relaxed) - 1);
    standing_.OnDequeue(now, waited, wait_.interval());
  }
  static constexpr int kAuto = -1;
  // The fixed limit (0 = unlimited), or kAuto: limiter_ decides. One relaxed load per admission.
  std::atomic<int> fixed_limit_{0};
  std::atomic<int> max_queued_{0};
  // Made by Configure() and kept for the server's life, so that switching max_concurrency at run
  // time never frees what a concurrent TryAdmit() or OnCallEnd() reads.
  std::optional<AutoConcurrencyLimiter> limiter_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> in_flight_{0};  // admitted, reply not queued yet
  std::atomic<int64_t> queued_{0};     // ... of which waiting for a thread
  QueueWaitEstimate wait_;             // fed by the dequeues of method calls
  StandingQueue standing_;             // ... as is this
  std::mutex idle_mutex_;
  std::condition_variable idle_;  // in_flight_ reached 0 while stopping
};

}  // namespace arenarpc::server
