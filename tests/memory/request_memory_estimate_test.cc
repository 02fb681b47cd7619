#include "memory/request_memory_estimate.h"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "echo/payload_generator.h"
#include "memory/message_memory_budget.h"
#include "memory_test.pb.h"

namespace arenarpc::memory {
namespace {

using google::protobuf::io::ArrayInputStream;
using memtest::Root;

uint64_t EstimateOf(const RequestMemoryEstimator& estimator, const std::string& wire,
                    uint64_t stop_above = UINT64_MAX) {
  ArrayInputStream in(wire.data(), static_cast<int>(wire.size()), 7);  // small chunks: refills
  return estimator.Estimate(in, stop_above);
}

// The estimate is at least what protobuf itself counts for the parsed message (SpaceUsedLong has
// no allocator overhead) and not wildly more, on every shape the tests have.
void ExpectCloseToParsed(const RequestMemoryEstimator& estimator, const google::protobuf::Message& m,
                         const char* what) {
  const std::string wire = m.SerializeAsString();
  std::unique_ptr<google::protobuf::Message> parsed(m.New());
  ASSERT_TRUE(parsed->ParseFromString(wire));
  const uint64_t used = parsed->SpaceUsedLong();
  const uint64_t estimate = EstimateOf(estimator, wire);
  EXPECT_GE(estimate, used) << what;
  EXPECT_LE(estimate, 4 * used + 1024) << what;
  EXPECT_LE(estimate, estimator.UpperBound(wire.size())) << what;
}

TEST(RequestMemoryEstimateTest, WorkloadRequestsAreEstimatedNearTheirParsedSize) {
  RequestMemoryEstimator estimator(*example::EchoRequest::descriptor());
  for (int scale : {1, 10}) {
    example::PayloadGenerator gen(scale, 42);
    for (int i = 0; i < 5; ++i) {
      example::EchoRequest request;
      gen.Fill(&request);
      request.add_message(std::string(100, 'm'));
      ExpectCloseToParsed(estimator, request, "workload");
    }
  }
}

TEST(RequestMemoryEstimateTest, EveryFieldKindIsCounted) {
  RequestMemoryEstimator estimator(*Root::descriptor());
  Root root;
  root.mutable_mid()->mutable_leaf()->add_value(std::string(300, 'v'));
  for (int i = 0; i < 50; ++i) {
    memtest::Mid* mid = root.add_mids();
    mid->add_leaves()->set_s(std::string(i, 's'));
    mid->set_maybe(i);
  }
  root.mutable_one_leaf()->set_n(3);
  for (int i = 0; i < 40; ++i) (*root.mutable_counts())["key" + std::to_string(i)] = i;
  root.set_blob(std::string(5000, 'b'));
  ExpectCloseToParsed(estimator, root, "every kind");
}

TEST(RequestMemoryEstimateTest, EmptySubMessagesCostTheirObjectsNotTheirBytes) {
  RequestMemoryEstimator estimator(*Root::descriptor());
  Root root;
  const int n = 100000;
  for (int i = 0; i < n; ++i) root.add_mids();
  const std::string wire = root.SerializeAsString();
  ASSERT_EQ(2u * n, wire.size());
  const uint64_t estimate = EstimateOf(estimator, wire);
  EXPECT_GE(estimate, n * (sizeof(memtest::Mid) + sizeof(void*)));
  EXPECT_GE(estimate, 20 * wire.size());
  ExpectCloseToParsed(estimator, root, "empty sub-messages");
  // Counting stops soon after the bound.
  const uint64_t stopped = EstimateOf(estimator, wire, 1u << 20);
  EXPECT_GT(stopped, 1u << 20);
  EXPECT_LT(stopped, (1u << 20) + 1024);
}

TEST(RequestMemoryEstimateTest, UnknownFieldsAndMalformedBytesAreBounded) {
  RequestMemoryEstimator estimator(*memtest::Leaf::descriptor());
  // Unknown fields (numbers 20..): varints, strings, groups.
  std::string unknown;
  for (int i = 0; i < 1000; ++i) unknown += std::string("\xa0\x01\x05", 3);  // 20: varint
  for (int i = 0; i < 1000; ++i) unknown += std::string("\xaa\x01\x00", 3);  // 21: empty string
  unknown += std::string("\xb3\x01\xa0\x01\x01\xb4\x01", 7);                 // 22: group
  EXPECT_GE(EstimateOf(estimator, unknown), 2000u * 32);
  EXPECT_LE(EstimateOf(estimator, unknown), estimator.UpperBound(unknown.size()));
  // Random bytes: never past the upper bound, never a crash.
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    std::string bytes(rng() % 200, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 4 == 0 ? 0 : rng());
    EXPECT_LE(EstimateOf(estimator, bytes), estimator.UpperBound(bytes.size()));
  }
  // Truncated: what the bytes before the cut hold.
  Root root;
  for (int i = 0; i < 1000; ++i) root.add_mids();
  const std::string wire = root.SerializeAsString();
  RequestMemoryEstimator root_estimator(*Root::descriptor());
  const uint64_t half = EstimateOf(root_estimator, wire.substr(0, wire.size() / 2 + 1));
  EXPECT_GT(half, EstimateOf(root_estimator, wire) / 3);
  EXPECT_LT(half, EstimateOf(root_estimator, wire));
}

TEST(RequestMemoryEstimateTest, JsonCountsObjectsElementsAndStrings) {
  RequestMemoryEstimator estimator(*Root::descriptor());
  std::string objects = "{\"mids\":[{}";
  for (int i = 1; i < 10000; ++i) objects += ",{}";
  objects += "]}";
  EXPECT_GE(estimator.EstimateJson(objects), 10000 * sizeof(Root));
  // A string-heavy body is about its size.
  const std::string text = "{\"blob\":\"" + std::string(100000, 'x') + "\"}";
  EXPECT_GE(estimator.EstimateJson(text), 100000u);
  EXPECT_LE(estimator.EstimateJson(text), 300000u);
  // Escapes do not end a string.
  EXPECT_LT(estimator.EstimateJson("{\"blob\":\"\\\"{{{{{{{{{{{{\"}"), 2000u);
}

TEST(MessageMemoryBudgetTest, ChargesUpToTheLimitAndGivesBack) {
  MessageMemoryBudget budget(100);
  MessageMemoryBudget::Charge a, b, c;
  EXPECT_TRUE(budget.TryCharge(60, &a));
  EXPECT_FALSE(budget.TryCharge(50, &b));
  EXPECT_EQ(60u, budget.in_use());
  EXPECT_TRUE(budget.TryCharge(40, &b));
  EXPECT_EQ(100u, budget.in_use());
  a.Return();
  b = MessageMemoryBudget::Charge();
  EXPECT_EQ(0u, budget.in_use());
  EXPECT_TRUE(budget.TryCharge(500, &c));  // alone: admitted whatever its size
  EXPECT_EQ(500u, budget.peak());
}

TEST(MessageMemoryBudgetTest, TrimsAfterASpikeAndAgainWhenTheLastCallEnds) {
  MessageMemoryBudget budget;  // no limit
  const uint64_t mib = 1u << 20;
  {
    MessageMemoryBudget::Charge big, small;
    ASSERT_TRUE(budget.TryCharge(40 * mib, &big));
    ASSERT_TRUE(budget.TryCharge(2 * mib, &small));
    big.Return();  // 42 -> 2 MiB: under a quarter of the high-water mark
    EXPECT_EQ(1u, budget.trims());
  }  // the last call ends: once more
  EXPECT_EQ(2u, budget.trims());
  MessageMemoryBudget::Charge under;
  ASSERT_TRUE(budget.TryCharge(8 * mib, &under));
  under.Return();  // below kTrimAfter: no trim
  EXPECT_EQ(2u, budget.trims());
}

}  // namespace
}  // namespace arenarpc::memory
