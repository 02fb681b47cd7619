// --payload_mix: parsing, the order that spreads each scale's share, and the ring built from it
// (its scale-10 requests are the pure scale-10 ring's; scale 0 sends an empty payload).
#include "press/payload_mix.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "press/press_options.h"
#include "press/request_source.h"

namespace arenarpc::press {
namespace {

TEST(PayloadMix, ParsesSharesAndRefusesMalformedOnes) {
  std::vector<PayloadShare> mix;
  ASSERT_EQ("", ParsePayloadMix("10:90,0:10", &mix));
  ASSERT_EQ(mix.size(), 2u);
  EXPECT_EQ(mix[0].scale, 10);
  EXPECT_EQ(mix[0].weight, 90u);
  EXPECT_EQ(mix[1].scale, 0);
  EXPECT_EQ(mix[1].weight, 10u);
  EXPECT_EQ(FormatPayloadMix(mix), "10:90,0:10");
  for (const char* bad : {"", "10", "10:", ":5", "10:0", "-1:3", "1001:1", "10:90,", "a:1",
                          "10:90;0:10", "1:1,2:100000"}) {
    EXPECT_NE("", ParsePayloadMix(bad, &mix)) << bad;
  }
}

TEST(PayloadMix, OrderSpreadsEachShareEvenly) {
  std::vector<PayloadShare> mix;
  ASSERT_EQ("", ParsePayloadMix("10:90,0:10", &mix));
  const std::vector<int> order = MixOrder(mix);
  ASSERT_EQ(order.size(), 10u);  // 9:1 once divided by the gcd
  EXPECT_EQ(std::count(order.begin(), order.end(), 0), 1);
  EXPECT_EQ(std::count(order.begin(), order.end(), 10), 9);

  ASSERT_EQ("", ParsePayloadMix("1:1,10:1", &mix));
  EXPECT_EQ(MixOrder(mix), (std::vector<int>{1, 10}));  // alternates

  ASSERT_EQ("", ParsePayloadMix("1:3,10:1", &mix));
  const std::vector<int> bimodal = MixOrder(mix);
  ASSERT_EQ(bimodal.size(), 4u);
  EXPECT_EQ(std::count(bimodal.begin(), bimodal.end(), 10), 1);
  // No two scale-10 calls in a row over repeated periods: the share is spread, not bunched.
  ASSERT_EQ("", ParsePayloadMix("10:1,1:2", &mix));
  const std::vector<int> spread = MixOrder(mix);
  for (size_t i = 0; i < 2 * spread.size(); ++i) {
    EXPECT_FALSE(spread[i % spread.size()] == 10 && spread[(i + 1) % spread.size()] == 10) << i;
  }
}

TEST(PayloadMix, RingHoldsTheSharesAndTheSeedRequestsOfThePureRing) {
  std::vector<PayloadShare> mix;
  ASSERT_EQ("", ParsePayloadMix("2:90,0:10", &mix));
  RequestSource mixed(mix, 16, 7);
  ASSERT_EQ(mixed.ring_size(), 20u);  // rounded up to whole periods of 10
  RequestSource pure(2, 18, 7);
  const std::vector<int> order = MixOrder(mix);
  int empty = 0, seed = 0;
  for (size_t i = 0; i < mixed.ring_size(); ++i) {
    const auto request = mixed.Next();
    ASSERT_TRUE(request->is_echo);
    if (order[i % order.size()] == 0) {
      EXPECT_TRUE(request->echo.payload().empty()) << i;
      ++empty;
      continue;
    }
    // Scale 2 draws the same requests, in the same order, as the pure ring.
    EXPECT_EQ(request->echo.payload(), pure.Next()->echo.payload()) << i;
    ++seed;
  }
  EXPECT_EQ(empty, 2);
  EXPECT_EQ(seed, 18);
  EXPECT_LT(mixed.mean_request_bytes(), pure.mean_request_bytes());
}

TEST(PayloadMix, DrawnPerCallFollowsTheOrder) {
  std::vector<PayloadShare> mix;
  ASSERT_EQ("", ParsePayloadMix("0:1,3:1", &mix));
  RequestSource source(mix, 0, 5);
  EXPECT_FALSE(source.pregenerated());
  int empty = 0;
  for (int i = 0; i < 40; ++i) empty += source.Next()->echo.payload().empty() ? 1 : 0;
  // Every other call is scale 0; a scale-3 payload is empty only when it draws no result (1/30).
  EXPECT_GE(empty, 20);
  EXPECT_LE(empty, 26);
}

TEST(PayloadMix, OptionsRefuseABadMixAndAMixWithAMethod) {
  PressOptions o;
  o.qps = 10;
  o.payload_mix = "10:90,0:10";
  EXPECT_EQ("", Validate(o));
  o.payload_mix = "10:x";
  EXPECT_NE(Validate(o).find("--payload_mix"), std::string::npos);
  o.payload_mix = "10:1";
  o.proto = "a.proto";
  o.method = "a.S.M";
  o.input = "in.json";
  EXPECT_NE(Validate(o).find("--payload_mix"), std::string::npos);
}

}  // namespace
}  // namespace arenarpc::press
