// Admission's bounds changed while it admits (live settings): the next TryAdmit() obeys the new
// max_concurrency / max_queued_requests, calls already admitted stay, and switching back and
// forth under concurrent admissions leaves the in-flight count exact.

#include "server/admission.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace arenarpc::server {
namespace {

using Verdict = Admission::Verdict;

TEST(AdmissionLiveTest, TheNextCallObeysTheNewBounds) {
  Admission admission;
  admission.Configure(MaxConcurrency(0), /*max_queued_requests=*/0, /*min_auto_limit=*/1);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(Verdict::kAdmitted, admission.TryAdmit());
  admission.SetMaxConcurrency(MaxConcurrency(2));
  EXPECT_EQ(2, admission.limit());
  EXPECT_EQ(Verdict::kOverLimit, admission.TryAdmit());
  EXPECT_EQ(3, admission.in_flight());  // admitted before the change: still in flight
  admission.Finish();
  admission.Finish();
  EXPECT_EQ(Verdict::kAdmitted, admission.TryAdmit());
  EXPECT_EQ(Verdict::kOverLimit, admission.TryAdmit());
  admission.SetMaxConcurrency(MaxConcurrency("auto"));
  EXPECT_TRUE(admission.is_auto());
  EXPECT_EQ(AutoConcurrencyLimiter::Options{}.initial_limit, admission.limit());
  EXPECT_EQ(Verdict::kAdmitted, admission.TryAdmit());
  admission.SetMaxConcurrency(MaxConcurrency(0));
  EXPECT_FALSE(admission.is_auto());
  EXPECT_EQ(0, admission.limit());
  admission.SetMaxQueuedRequests(1);
  admission.Queued();
  EXPECT_EQ(Verdict::kQueueFull, admission.TryAdmit());
  admission.SetMaxQueuedRequests(0);
  EXPECT_EQ(Verdict::kAdmitted, admission.TryAdmit());
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
        if (admission.TryAdmit() == Verdict::kAdmitted) {
          admitted.fetch_add(1);
          const auto now = std::chrono::steady_clock::now();
          admission.OnCallEnd(now, start, true);
          admission.Finish();
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
