#include "server/admission_ticket.h"

#include <gtest/gtest.h>

#include <chrono>
#include <utility>
#include <vector>

#include "server/admission.h"

namespace arenarpc::server {
namespace {

using std::chrono::milliseconds;

class AdmissionTicketTest : public ::testing::Test {
 protected:
  void SetUp() override { admission_.Configure(MaxConcurrency(), /*max_queued_requests=*/2, 1); }
  AdmissionTicket Admit() {
    return AdmissionTicket::Admit(admission_, milliseconds::zero(), &verdict_);
  }

  Admission admission_;
  Admission::Verdict verdict_ = Admission::Verdict::kStopping;
};

TEST_F(AdmissionTicketTest, SettlesExactlyOnceWhicheverWayItEnds) {
  {
    AdmissionTicket ticket = Admit();
    ASSERT_TRUE(ticket);
    EXPECT_EQ(1, admission_.in_flight());
    ticket.Settle();  // the reply is queued
    EXPECT_FALSE(ticket);
    EXPECT_EQ(0, admission_.in_flight());
    ticket.Settle();  // a second settlement does nothing
  }  // nor does the destructor
  EXPECT_EQ(0, admission_.in_flight());
  {
    AdmissionTicket ticket = Admit();  // answered with an error on the way: dropped
    EXPECT_EQ(1, admission_.in_flight());
  }
  EXPECT_EQ(0, admission_.in_flight());
}

TEST_F(AdmissionTicketTest, MovesWithItsUnitAndSettlesOnlyFromItsLastHolder) {
  AdmissionTicket first = Admit();
  AdmissionTicket moved = std::move(first);
  EXPECT_FALSE(first);  // NOLINT(bugprone-use-after-move): a moved-from ticket holds nothing
  EXPECT_TRUE(moved);
  first.Settle();
  EXPECT_EQ(1, admission_.in_flight());
  AdmissionTicket other = Admit();
  EXPECT_EQ(2, admission_.in_flight());
  other = std::move(moved);  // the ticket other held settles, moved's goes on
  EXPECT_EQ(1, admission_.in_flight());
  other = AdmissionTicket();
  EXPECT_EQ(0, admission_.in_flight());
}

TEST_F(AdmissionTicketTest, HoldsAPlaceInTheQueueUntilAThreadTakesItOrItIsDropped) {
  AdmissionTicket taken = Admit();
  AdmissionTicket dropped = Admit();
  taken.Queued();
  taken.Queued();  // once
  dropped.Queued();
  EXPECT_EQ(2, admission_.queued());
  EXPECT_FALSE(Admit());  // max_queued_requests=2
  EXPECT_EQ(Admission::Verdict::kQueueFull, verdict_);
  taken.TakenByThread(std::chrono::steady_clock::now(), std::chrono::milliseconds(1));
  EXPECT_EQ(1, admission_.queued());
  dropped = AdmissionTicket();  // its connection closed before a thread took it
  EXPECT_EQ(0, admission_.queued());
  EXPECT_EQ(1, admission_.in_flight());
  taken.Settle();
  EXPECT_EQ(0, admission_.in_flight());
}

TEST_F(AdmissionTicketTest, RefusedUnitsHoldNothingAndStopWaitsForTheLastTicket) {
  std::vector<AdmissionTicket> tickets;
  tickets.push_back(Admit());
  ASSERT_TRUE(admission_.StartStopping());
  EXPECT_FALSE(Admit());
  EXPECT_EQ(Admission::Verdict::kStopping, verdict_);
  EXPECT_EQ(1, admission_.in_flight());
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(20);
  admission_.WaitIdle(deadline);  // one still in flight: waits out the deadline
  EXPECT_GE(std::chrono::steady_clock::now(), deadline);
  tickets.clear();
  admission_.WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(10));
  EXPECT_EQ(0, admission_.in_flight());
}

}  // namespace
}  // namespace arenarpc::server
