// Admission's bounds changed while it admits (live settings): the next TryAdmit() obeys the new
// max_concurrency / max_queued_requests, calls already admitted stay, and switching back and
// forth under concurrent admissions leaves the in-flight count exact.

#include "server/admission.h"
#include "server/admission_ticket.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace arenarpc::server {
namespace {

using Verdict = Admission::Verdict;

// Admits through a ticket, as the server does; *ticket holds the unit when it was admitted.
Verdict Admit(Admission& admission, AdmissionTicket* ticket = nullptr) {
  Verdict verdict;
  AdmissionTicket made = AdmissionTicket::Admit(admission, std::chrono::milliseconds::zero(),
                                                &verdict);
  if (ticket != nullptr) *ticket = std::move(made);
  return verdict;
}

TEST(AdmissionLiveTest, TheNextCallObeysTheNewBounds) {
  Admission admission;
  admission.Configure(MaxConcurrency(0), /*max_queued_requests=*/0, /*min_auto_limit=*/1);
  std::vector<AdmissionTicket> running(3);
  for (AdmissionTicket& ticket : running) ASSERT_EQ(Verdict::kAdmitted, Admit(admission, &ticket));
  admission.SetMaxConcurrency(MaxConcurrency(2));
  EXPECT_EQ(2, admission.limit());
  EXPECT_EQ(Verdict::kOverLimit, Admit(admission));
  EXPECT_EQ(3, admission.in_flight());  // admitted before the change: still in flight
  running.resize(1);                    // two replies queued
  AdmissionTicket another;
  EXPECT_EQ(Verdict::kAdmitted, Admit(admission, &another));
  EXPECT_EQ(Verdict::kOverLimit, Admit(admission));
  admission.SetMaxConcurrency(MaxConcurrency("auto"));
  EXPECT_TRUE(admission.is_auto());
  EXPECT_EQ(AutoConcurrencyLimiter::Options{}.initial_limit, admission.limit());
  EXPECT_EQ(Verdict::kAdmitted, Admit(admission));
  admission.SetMaxConcurrency(MaxConcurrency(0));
  EXPECT_FALSE(admission.is_auto());
  EXPECT_EQ(0, admission.limit());
  admission.SetMaxQueuedRequests(1);
  another.Queued();
  EXPECT_EQ(Verdict::kQueueFull, Admit(admission));
  admission.SetMaxQueuedRequests(0);
  EXPECT_EQ(Verdict::kAdmitted, Admit(admission));
}

TEST(AdmissionLiveTest, SwitchingWhileCallsAreAdmittedKeepsTheCountExact) {
  Admission admission;
  admission.Configure(MaxConcurrency(0), 0, 1);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> admitted{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 2; ++t) {
    callers.emplace_back([&] {
      const auto start = std::chrono::steady_clock::now();
      while (!stop.load()) {
        AdmissionTicket ticket;
        if (Admit(admission, &ticket) == Verdict::kAdmitted) {
          admitted.fetch_add(1);
          const auto now = std::chrono::steady_clock::now();
          admission.OnCallEnd(now, start, true);
          ticket.Settle();
        }
      }
    });
  }
  const MaxConcurrency specs[] = {MaxConcurrency("auto"), MaxConcurrency(1), MaxConcurrency(0)};
  // Switches until the callers got through many admissions (or 20 s passed).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  int switches = 0;
  while ((admitted.load() < 20000 || switches < 3000) &&
         std::chrono::steady_clock::now() < deadline) {
    admission.SetMaxConcurrency(specs[switches++ % 3]);
  }
  stop.store(true);
  for (auto& thread : callers) thread.join();
  EXPECT_EQ(0, admission.in_flight());
  EXPECT_GE(admitted.load(), 20000u);
}

}  // namespace
}  // namespace arenarpc::server
