// The wait a call admitted now would have in the backlog (deadline-aware admission), fed with
// synthetic dequeues: a busy backlog's drain interval times the calls ahead; light load, whose
// dequeues are spaced by arrivals rather than by the threads, measures nothing.

#include "server/queue_wait_estimate.h"

#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <vector>

#include "server/admission.h"
#include "server/admission_ticket.h"

namespace arenarpc::server {
namespace {

using std::chrono::milliseconds, std::chrono::microseconds;
using Clock = QueueWaitEstimate::Clock;

TEST(QueueWaitEstimateTest, ABusyBacklogPredictsCallsAheadTimesTheDrainInterval) {
  QueueWaitEstimate estimate;
  Clock::time_point now{std::chrono::seconds(100)};
  EXPECT_EQ(0, estimate.Predict(50).count());  // nothing measured yet
  for (int i = 0; i < 200; ++i, now += microseconds(1300)) estimate.OnDequeue(now, 40);
  EXPECT_NEAR(1300, std::chrono::duration_cast<microseconds>(estimate.interval()).count(), 1);
  EXPECT_NEAR(130, std::chrono::duration_cast<milliseconds>(estimate.Predict(100)).count(), 1);
  // The threads get faster: the average follows within a few dozen dequeues.
  for (int i = 0; i < 100; ++i, now += microseconds(300)) estimate.OnDequeue(now, 40);
  EXPECT_NEAR(300, std::chrono::duration_cast<microseconds>(estimate.interval()).count(), 10);
}

TEST(QueueWaitEstimateTest, DequeuesOfAnIdleBacklogAreNotSamples) {
  QueueWaitEstimate estimate;
  Clock::time_point now{std::chrono::seconds(100)};
  // One call a second, each leaving an empty backlog: the gaps measure arrivals, not service.
  for (int i = 0; i < 20; ++i, now += std::chrono::seconds(1)) estimate.OnDequeue(now, 0);
  EXPECT_EQ(0, estimate.interval().count());
  // A busy period: only the gaps that followed a dequeue leaving calls behind count.
  estimate.OnDequeue(now, 3);
  now += milliseconds(2);
  estimate.OnDequeue(now, 2);
  EXPECT_EQ(2, std::chrono::duration_cast<milliseconds>(estimate.interval()).count());
  now += milliseconds(2);
  estimate.OnDequeue(now, 0);  // the last waiting call: a sample, and the backlog is idle again
  for (int i = 0; i < 5; ++i) {
    now += std::chrono::seconds(5);
    estimate.OnDequeue(now, 0);  // the gaps of an idle backlog are not samples
  }
  EXPECT_EQ(2, std::chrono::duration_cast<milliseconds>(estimate.interval()).count());
}

TEST(AdmissionTest, ACallIsRefusedWhenItsQueueWaitWouldPassHalfItsDeadline) {
  Admission admission;
  admission.Configure(MaxConcurrency(), /*max_queued_requests=*/1024, /*min_auto_limit=*/1);
  // Admission reads the clock to see whether a standing-queue verdict is still fresh.
  Clock::time_point now = Clock::now();
  Admission::Verdict verdict;
  auto admit = [&](milliseconds timeout) {
    return AdmissionTicket::Admit(admission, timeout, &verdict);
  };
  // 60 calls queued, draining one per 10 ms: a new call would wait ~600 ms.
  std::deque<AdmissionTicket> backlog;
  for (int i = 0; i < 61; ++i) {
    backlog.push_back(admit(milliseconds(5000)));
    ASSERT_EQ(Admission::Verdict::kAdmitted, verdict);
    backlog.back().Queued();
  }
  std::vector<AdmissionTicket> running;
  for (int i = 0; i < 20; ++i, now += milliseconds(10)) {
    backlog.front().TakenByThread(now, milliseconds(600));
    running.push_back(std::move(backlog.front()));
    backlog.pop_front();
    backlog.push_back(admit(milliseconds::zero()));  // one more arrives: the backlog stays at 60
    ASSERT_EQ(Admission::Verdict::kAdmitted, verdict);
    backlog.back().Queued();
  }
  EXPECT_EQ(61, admission.queued());
  EXPECT_NEAR(600, std::chrono::duration_cast<milliseconds>(admission.predicted_wait()).count(),
              20);
  EXPECT_FALSE(admit(milliseconds(1000)));
  EXPECT_EQ(Admission::Verdict::kWaitPastDeadline, verdict);
  // Within half its deadline, but every call taken for 100 ms had waited 600 ms: the backlog
  // stands, and holds a call to twice a target of 4 drain intervals (80 ms), not to its deadline.
  EXPECT_FALSE(admit(milliseconds(1300)));
  EXPECT_EQ(Admission::Verdict::kStandingQueue, verdict);
  EXPECT_EQ(80, std::chrono::duration_cast<milliseconds>(admission.standing_bound()).count());
  EXPECT_TRUE(admit(milliseconds::zero()));  // no deadline: not bounded
  EXPECT_EQ(Admission::Verdict::kAdmitted, verdict);
  EXPECT_EQ(81, admission.in_flight());  // the two tickets just made were settled as they went
}

}  // namespace
}  // namespace arenarpc::server
