// Load balancers on their own (no network): distributions, exclusion, health, the hash ring.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "arenarpc/cluster/hash.h"
#include "cluster/load_balancer.h"
#include "net/endpoint.h"

namespace arenarpc::cluster {
namespace {

class TestServerLoad : public ServerLoad {
 public:
  using ServerLoad::ServerLoad;
  void set_healthy(bool healthy) { healthy_.store(healthy); }
};

std::vector<ServerPtr> MakeServers(int n, std::vector<int> weights = {}) {
  std::vector<ServerPtr> servers;
  for (int i = 0; i < n; ++i) {
    ServerNode node;
    std::string error;
    EXPECT_TRUE(net::ParseEndpoint("127.0.0.1:" + std::to_string(10000 + i), &node.endpoint, &error));
    if (!weights.empty()) node.weight = weights[i];
    servers.push_back(std::make_shared<TestServerLoad>(node));
  }
  return servers;
}

std::unique_ptr<LoadBalancer> Make(std::string_view name) {
  std::string error;
  auto lb = MakeLoadBalancer(name, &error);
  EXPECT_TRUE(lb) << error;
  return lb;
}

std::map<const ServerLoad*, int> Count(LoadBalancer& lb, int calls, uint64_t code = 0) {
  std::map<const ServerLoad*, int> counts;
  for (int i = 0; i < calls; ++i) {
    SelectInput input;
    input.request_code = code;
    ServerPtr s = lb.Select(input);
    EXPECT_TRUE(s);
    if (s) ++counts[s.get()];
  }
  return counts;
}

TEST(MurmurHash32, KnownVectors) {
  EXPECT_EQ(MurmurHash32("", 0), 0u);
  EXPECT_EQ(MurmurHash32("", 1), 0x514E28B7u);
  EXPECT_EQ(MurmurHash32("hello", 0), 0x248BFA47u);
  EXPECT_EQ(MurmurHash32("The quick brown fox jumps over the lazy dog", 0), 0x2E4FF723u);
}

TEST(LoadBalancer, UnknownNameIsRejectedWithTheKnownNames) {
  std::string error;
  EXPECT_EQ(MakeLoadBalancer("round_robin", &error), nullptr);
  EXPECT_NE(error.find("round_robin"), std::string::npos) << error;
  EXPECT_NE(error.find("c_murmurhash"), std::string::npos) << error;
}

TEST(LoadBalancer, EmptyListSelectsNothing) {
  for (const char* name : {"rr", "random", "wrr", "c_murmurhash", "la"}) {
    auto lb = Make(name);
    lb->Reset({});
    EXPECT_EQ(lb->Select({}), nullptr) << name;
  }
}

TEST(RoundRobin, ExactShares) {
  auto servers = MakeServers(3);
  auto lb = Make("rr");
  lb->Reset(servers);
  for (const auto& [server, count] : Count(*lb, 300)) EXPECT_EQ(count, 100);
}

TEST(WeightedRoundRobin, ExactSharesByWeightAndInterleaved) {
  auto servers = MakeServers(3, {1, 2, 3});
  auto lb = Make("wrr");
  lb->Reset(servers);
  auto counts = Count(*lb, 600);
  EXPECT_EQ(counts[servers[0].get()], 100);
  EXPECT_EQ(counts[servers[1].get()], 200);
  EXPECT_EQ(counts[servers[2].get()], 300);
  // Smooth: the heaviest server never gets more than two picks in a row.
  int run = 0, longest = 0;
  for (int i = 0; i < 60; ++i) {
    run = lb->Select({}).get() == servers[2].get() ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  EXPECT_LE(longest, 2);
}

TEST(Random, SharesWithinBounds) {
  auto servers = MakeServers(4);
  auto lb = Make("random");
  lb->Reset(servers);
  auto counts = Count(*lb, 8000);
  ASSERT_EQ(counts.size(), 4u);
  // Expected 2000 each; standard deviation ~39: 1700..2300 is beyond 7 sigma.
  for (const auto& [server, count] : counts) {
    EXPECT_GT(count, 1700);
    EXPECT_LT(count, 2300);
  }
}

TEST(LoadBalancer, SkipsUnhealthyAndExcludedServers) {
  for (const char* name : {"rr", "random", "wrr", "c_murmurhash", "la"}) {
    auto servers = MakeServers(3);
    auto lb = Make(name);
    lb->Reset(servers);
    static_cast<TestServerLoad&>(*servers[1]).set_healthy(false);
    for (int i = 0; i < 50; ++i) {
      SelectInput input;
      input.request_code = MurmurHash32(std::to_string(i));
      const ServerLoad* excluded[] = {servers[0].get()};
      input.excluded = excluded;
      ServerPtr s = lb->Select(input);
      ASSERT_TRUE(s) << name;
      EXPECT_EQ(s.get(), servers[2].get()) << name;  // 1 is down, 0 was tried
    }
    // Only tried servers are healthy: one of them rather than nothing.
    static_cast<TestServerLoad&>(*servers[2]).set_healthy(false);
    SelectInput input;
    const ServerLoad* excluded[] = {servers[0].get()};
    input.excluded = excluded;
    EXPECT_EQ(lb->Select(input).get(), servers[0].get()) << name;
    static_cast<TestServerLoad&>(*servers[0]).set_healthy(false);
    EXPECT_EQ(lb->Select(input), nullptr) << name;
  }
}

TEST(RoundRobin, AnUnhealthyServersTurnsSpreadOverTheOthers) {
  for (const char* name : {"rr", "wrr"}) {
    auto servers = MakeServers(4);
    auto lb = Make(name);
    lb->Reset(servers);
    static_cast<TestServerLoad&>(*servers[1]).set_healthy(false);
    auto counts = Count(*lb, 4000);
    EXPECT_EQ(counts.count(servers[1].get()), 0u) << name;
    // 1000 turns each, plus about a third of the unhealthy server's 1000 (binomial, sd ~15).
    for (int i : {0, 2, 3}) {
      EXPECT_GT(counts[servers[i].get()], 1200) << name << " server " << i;
      EXPECT_LT(counts[servers[i].get()], 1470) << name << " server " << i;
    }
  }
}

TEST(ConsistentHash, SameKeySameServerAndOnlyTheRemovedServersKeysMove) {
  auto servers = MakeServers(5);
  auto lb = Make("c_murmurhash");
  EXPECT_TRUE(lb->needs_request_code());
  lb->Reset(servers);
  constexpr int kKeys = 2000;
  std::vector<const ServerLoad*> before(kKeys);
  std::map<const ServerLoad*, int> counts;
  for (int k = 0; k < kKeys; ++k) {
    SelectInput input;
    input.request_code = MurmurHash32("user-" + std::to_string(k));
    before[k] = lb->Select(input).get();
    EXPECT_EQ(lb->Select(input).get(), before[k]);  // sticky
    ++counts[before[k]];
  }
  for (const auto& [server, count] : counts) {
    EXPECT_GT(count, kKeys / 5 / 2) << "100 points per server spread keys roughly evenly";
  }
  const ServerLoad* removed = servers[2].get();
  std::vector<ServerPtr> remaining = servers;
  remaining.erase(remaining.begin() + 2);
  lb->Reset(remaining);
  // Counted from what changed, not from whose server left: every key that changed server had the
  // removed one, every key of the removed one changed, and they spread over the others.
  int moved = 0;
  std::map<const ServerLoad*, int> moved_to;
  for (int k = 0; k < kKeys; ++k) {
    SelectInput input;
    input.request_code = MurmurHash32("user-" + std::to_string(k));
    const ServerLoad* now = lb->Select(input).get();
    ASSERT_NE(now, nullptr);
    EXPECT_NE(now, removed);
    if (now != before[k]) {
      ++moved;
      ++moved_to[now];
      EXPECT_EQ(before[k], removed) << "key " << k << " moved although its server stayed";
    }
  }
  EXPECT_EQ(moved, counts[removed]);
  EXPECT_GT(counts[removed], 0);
  EXPECT_GE(moved_to.size(), 2u) << "100 points per server hand the keys to several neighbours";
}

TEST(LocalityAware, SlowAndBusyServersGetLess) {
  auto servers = MakeServers(3);
  auto lb = Make("la");
  lb->Reset(servers);
  // Server 0: 10 ms; servers 1 and 2: 1 ms.
  for (int i = 0; i < 50; ++i) {
    servers[0]->AttemptStarted();
    servers[0]->AttemptEnded(10000);
    servers[1]->AttemptStarted();
    servers[1]->AttemptEnded(1000);
    servers[2]->AttemptStarted();
    servers[2]->AttemptEnded(1000);
  }
  auto counts = Count(*lb, 3000);
  // Weights 1/10 : 1 : 1 -> about 143 of 3000 for the slow one.
  EXPECT_LT(counts[servers[0].get()], 300);
  EXPECT_GT(counts[servers[1].get()], 1200);
  // Nine calls in flight on server 1 make it look 10x slower.
  for (int i = 0; i < 9; ++i) servers[1]->AttemptStarted();
  counts = Count(*lb, 3000);
  EXPECT_LT(counts[servers[1].get()], 300);
  EXPECT_GT(counts[servers[2].get()], 2000);
}

}  // namespace
}  // namespace arenarpc::cluster
