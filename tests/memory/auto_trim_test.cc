// No tax for having tried: once a method settles, the candidates no method of the "auto"
// strategy uses any more give back their pooled objects and cached pages.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "arenarpc/memory/message_memory.h"
#include "auto_test_support.h"
#include "echo/payload_generator.h"
#include "memory/strategies.h"
#include "memory_test.pb.h"

namespace arenarpc::memory {
namespace {

using example::EchoRequest;
using example::EchoResponse;

void Echo(MethodMemory& method, const std::string& wire) {
  MessagePair pair = method.Acquire();
  SerializedSpan bytes(wire);
  ASSERT_EQ(pair.ParseRequest(bytes), ParseResult::kOk);
  auto& request = static_cast<EchoRequest&>(*pair.request());
  auto& response = static_cast<EchoResponse&>(*pair.response());
  response.mutable_payload()->CopyFrom(request.payload());
  pair.PrepareResponse();
  ASSERT_EQ(response.SerializeAsString().size(), wire.size());
}

std::string Workload() {
  EchoRequest request;
  example::PayloadGenerator(1, 3).Fill(&request);
  return request.SerializeAsString();
}

class AutoTrimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MemoryOptions options;
    options.reuse.min_call_bytes = 0;  // pool every call, however small
    paged_ = MakeMessageMemory("paged", options, nullptr);
    reuse_ = MakeMessageMemory("reuse", options, nullptr);
    // heap is the cheapest by far: the trials must settle on it.
    automatic_ =
        MakeAutoMemory({std::make_shared<SlowMemory>("paged", paged_, 300'000),
                        std::make_shared<SlowMemory>("reuse", reuse_, 300'000),
                        std::make_shared<SlowMemory>("heap",
                                                     MakeMessageMemory(MemoryMode::kHeap), 0)},
                       QuickAutoSettings());
  }

  // Calls until the method's first trial and its confirmation trial have ended (the losers keep
  // their memory between the two, so that the confirmation measures them warm).
  void SettleConfirmed(MethodMemory& method) {
    for (int i = 0; i < 5000 && !Confirmed(method); ++i) Echo(method, wire_);
    ASSERT_TRUE(Confirmed(method));
  }
  static bool Confirmed(const MethodMemory& method) {
    const auto choice = method.Choice();
    return choice->trials >= 2 && !choice->in_trial;
  }

  std::unique_ptr<MethodMemory> Bind() {
    return automatic_->Bind(EchoRequest::default_instance(), EchoResponse::default_instance());
  }

  std::shared_ptr<MessageMemory> paged_, reuse_, automatic_;
  const std::string wire_ = Workload();
};

TEST_F(AutoTrimTest, LosersHoldNothingOnceTheMethodSettles) {
  auto method = Bind();
  // One call each: the losers now keep what their call used.
  for (int i = 0; i < 3; ++i) Echo(*method, wire_);
  ASSERT_TRUE(method->Choice()->in_trial);
  EXPECT_GE(reuse_->stats().objects_pooled, 1u);  // the request (the response is on an arena)
  EXPECT_GT(reuse_->stats().retained_bytes_estimate, 0u);
  EXPECT_GT(paged_->stats().pages_cached, 0u);
  for (int i = 0; i < 200 && method->Choice()->in_trial; ++i) Echo(*method, wire_);
  ASSERT_FALSE(method->Choice()->in_trial);
  ASSERT_EQ(method->Choice()->chosen, "heap");
  // Settled once: the losers keep their memory for the confirmation trial.
  EXPECT_GE(reuse_->stats().objects_pooled, 1u);
  EXPECT_GT(paged_->stats().pages_cached, 0u);
  SettleConfirmed(*method);
  ASSERT_EQ(method->Choice()->chosen, "heap");
  // The bound: nothing pooled; cached pages only in the caches of other threads that ran the
  // losers' calls (none here).
  EXPECT_EQ(reuse_->stats().objects_pooled, 0u);
  EXPECT_EQ(reuse_->stats().retained_bytes_estimate, 0u);
  EXPECT_EQ(paged_->stats().pages_cached, 0u);
  EXPECT_EQ(paged_->stats().pages_outstanding, 0u);
  // Serving on: the losers stay empty.
  for (int i = 0; i < 20; ++i) Echo(*method, wire_);
  EXPECT_EQ(reuse_->stats().objects_pooled, 0u);
  EXPECT_EQ(paged_->stats().pages_cached, 0u);
}

TEST_F(AutoTrimTest, ACandidateAnotherMethodStillTriesIsKept) {
  auto settled = Bind();
  auto trying = Bind();
  for (int i = 0; i < 3; ++i) Echo(*trying, wire_);  // reuse and paged now hold its objects
  ASSERT_TRUE(trying->Choice()->in_trial);
  SettleConfirmed(*settled);
  // `trying` is still in its trial: the losers keep what they hold.
  EXPECT_GE(reuse_->stats().objects_pooled, 1u);
  EXPECT_GT(paged_->stats().pages_cached, 0u);
  SettleConfirmed(*trying);
  EXPECT_EQ(reuse_->stats().objects_pooled, 0u);
  EXPECT_EQ(paged_->stats().pages_cached, 0u);
}

TEST_F(AutoTrimTest, AMethodWithoutCallsKeepsNothingInUse) {
  auto idle = Bind();  // never called: it stays in its first trial
  auto method = Bind();
  SettleConfirmed(*method);
  ASSERT_TRUE(idle->Choice()->in_trial);
  EXPECT_EQ(reuse_->stats().objects_pooled, 0u);
  EXPECT_EQ(paged_->stats().pages_cached, 0u);
}

TEST_F(AutoTrimTest, ADestroyedMethodStopsCounting) {
  {
    auto gone = Bind();
    for (int i = 0; i < 3; ++i) Echo(*gone, wire_);
  }  // unbound mid-trial
  auto method = Bind();
  SettleConfirmed(*method);
  EXPECT_EQ(reuse_->stats().objects_pooled, 0u);
  EXPECT_EQ(paged_->stats().pages_cached, 0u);
}

}  // namespace
}  // namespace arenarpc::memory
