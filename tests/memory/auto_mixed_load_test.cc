// "auto" in a real server under the traffic that fooled it: the seed workload with a tenth of its
// calls tiny (empty payloads, in bursts) settles on the strategy the pure seed workload settles
// on; and a switch made while several clients call loses no call, and every reply is the bytes
// its request asked for.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/channel.h"
#include "arenarpc/controller.h"
#include "arenarpc/server.h"
#include "auto_test_support.h"
#include "echo/echo_service.h"
#include "echo/payload_generator.h"
#include "memory/strategies.h"

namespace arenarpc::memory {
namespace {

using example::EchoRequest;
using example::EchoResponse;

constexpr char kEcho[] = "arenarpc.example.EchoService.Echo";

// A server of the echo service with `strategy`, and a channel to it.
class EchoServer {
 public:
  explicit EchoServer(std::shared_ptr<MessageMemory> strategy) {
    ServerOptions options;
    options.num_threads = 2;
    options.memory_strategy = std::move(strategy);
    EXPECT_EQ(0, server_.AddService(&service_, SERVER_DOESNT_OWN_SERVICE));
    EXPECT_EQ(0, server_.Start("127.0.0.1:0", options)) << server_.last_error();
    ChannelOptions channel_options;
    channel_options.timeout_ms = 30000;
    EXPECT_EQ(0, channel_.Init("127.0.0.1:" + std::to_string(server_.listen_port()),
                               &channel_options));
  }
  ~EchoServer() { Stop(); }
  // Stops and joins: every call's messages have been released.
  void Stop() {
    server_.Stop();
    server_.Join();
  }

  // One call; the reply's payload must be the request's, byte for byte.
  ::testing::AssertionResult Call(const EchoRequest& request) {
    example::EchoService_Stub stub(&channel_);
    EchoResponse response;
    Controller controller;
    stub.Echo(&controller, &request, &response, nullptr);
    if (controller.Failed()) return ::testing::AssertionFailure() << controller.ErrorText();
    if (request.payload().SerializeAsString() != response.payload().SerializeAsString()) {
      return ::testing::AssertionFailure() << "reply differs from its request";
    }
    return ::testing::AssertionSuccess();
  }

  MemoryChoice Choice() {
    const MethodStats stats = server_.GetMethodStats(kEcho);
    return stats.memory_choice.value_or(MemoryChoice{});
  }
  uint64_t Calls() { return server_.GetMethodStats(kEcho).calls; }

 private:
  example::EchoServiceImpl service_;
  Server server_;
  Channel channel_;
};

std::vector<EchoRequest> SeedRequests(int scale, int count) {
  example::PayloadGenerator generator(scale, 0x5eed);
  std::vector<EchoRequest> requests(count);
  for (EchoRequest& request : requests) generator.Fill(request.mutable_payload());
  return requests;
}

#if defined(ARENARPC_SANITIZED)
constexpr bool kCpuDecisionsAreTheCodes = false;
#else
constexpr bool kCpuDecisionsAreTheCodes = true;
#endif

// One turn per candidate in a trial; no recheck while the test runs.
AutoSettings OneTurnTrials() {
  AutoSettings s;
  s.candidates = {"heap", "reuse"};
  s.warmup_calls = 4;
  s.trial_calls = 24;
  s.trial_block = s.warmup_calls + s.trial_calls;
  s.sample_every = 64;
  return s;
}

// Calls the seed workload until the first trial is decided; the first `burst` of every
// `burst_every` calls carry an empty payload (0: none). Returns the decision.
MemoryChoice SettleOnce(int burst_every, int burst) {
  EchoServer server(MakeAutoMemory(
      {MakeMessageMemory(MemoryMode::kHeap), MakeMessageMemory(MemoryMode::kReuse)},
      OneTurnTrials()));
  const std::vector<EchoRequest> seed = SeedRequests(10, 16);
  EchoRequest tiny;
  tiny.mutable_payload();
  for (int i = 0; i < 2000; ++i) {
    const bool is_tiny = burst_every > 0 && i % burst_every < burst;
    EXPECT_TRUE(server.Call(is_tiny ? tiny : seed[i % seed.size()])) << "call " << i;
    const MemoryChoice choice = server.Choice();
    if (choice.trials >= 1 && !choice.in_trial) return choice;
  }
  ADD_FAILURE() << "no decision after 2000 calls";
  return {};
}

TEST(AutoMixedLoad, TinyCallsMixedInSettleOnTheSeedWorkloadsChoice) {
  // A trial of 24 calls per candidate measures CPU time: a machine busy with other tests can flip
  // one trial, so the decision is asked of up to three pairs of servers and one pair that agrees
  // with the seed workload's cost ranking is enough. A mechanism that lets tiny calls crown heap
  // fails every pair.
  std::string seen;
  bool agreed = false;
  for (int attempt = 0; attempt < 3 && !agreed; ++attempt) {
    const MemoryChoice pure = SettleOnce(0, 0);
    // A tenth of the calls empty, twenty in a row: the first candidate's first turn (4 + 24
    // calls) gets 16 of them counted, and its raw median is an empty call's (what once crowned
    // heap).
    const MemoryChoice mixed = SettleOnce(200, 20);
    // The mixed trial measured both candidates at the seed call's size.
    for (const auto& candidate : mixed.candidates) {
      EXPECT_TRUE(candidate.comparable) << candidate.name << ": " << mixed.reason;
      EXPECT_GE(candidate.samples, 24u) << candidate.name;
    }
    EXPECT_GT(mixed.reference_bytes, 100'000u) << mixed.reason;  // ~2 x 136 KB, not a tiny call's
    // heap does about twice reuse's work per seed call (docs/benchmarks.md).
    agreed = pure.chosen == "reuse" && mixed.chosen == pure.chosen;
    seen += "pure: " + pure.reason + "\nmixed: " + mixed.reason + "\n";
  }
  // Not asserted under the sanitizers, whose instrumentation sets what each candidate's code
  // costs: a fresh-clone TSan run chose heap for the pure workload once (the mixed one reuse).
  if (kCpuDecisionsAreTheCodes) {
    EXPECT_TRUE(agreed) << seen;
  }
}

TEST(AutoMixedLoad, SwitchUnderLoadLosesNoCallAndKeepsRepliesByteIdentical) {
  constexpr uint64_t kBurnNs = 3'000'000;
  auto burn_paged = std::make_shared<std::atomic<uint64_t>>(0);
  auto burn_reuse = std::make_shared<std::atomic<uint64_t>>(kBurnNs);
  const std::shared_ptr<MessageMemory> paged = MakeMessageMemory(MemoryMode::kPaged);
  const std::shared_ptr<MessageMemory> reuse = MakeMessageMemory(MemoryMode::kReuse);
  AutoSettings settings = QuickAutoSettings();
  settings.recheck_calls = 64;  // a trial every ~64 calls: the switch comes soon after the flip
  EchoServer server(MakeAutoMemory({std::make_shared<SlowMemory>("paged", paged, burn_paged),
                                    std::make_shared<SlowMemory>("reuse", reuse, burn_reuse)},
                                   settings));
  // Requests of several sizes (scale 0 is an empty payload), all different.
  std::vector<EchoRequest> requests;
  for (int scale : {1, 2, 3}) {
    for (EchoRequest& request : SeedRequests(scale, 8)) requests.push_back(std::move(request));
  }
  requests.emplace_back().mutable_payload();

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> sent{0}, failed{0};
  std::vector<std::string> failures(4);
  std::vector<std::thread> clients;
  for (size_t c = 0; c < failures.size(); ++c) {
    clients.emplace_back([&, c] {
      for (size_t i = c; !stop.load(std::memory_order_relaxed); ++i) {
        sent.fetch_add(1, std::memory_order_relaxed);
        if (auto result = server.Call(requests[i % requests.size()]); !result) {
          failed.fetch_add(1, std::memory_order_relaxed);
          failures[c] = result.message();
        }
      }
    });
  }
  const auto wait_for = [&](auto done, const char* what) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!done(server.Choice())) {
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "timed out waiting for " << what << ": " << server.Choice().reason;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  };
  wait_for([](const MemoryChoice& c) { return c.trials >= 1 && !c.in_trial; }, "a decision");
  EXPECT_EQ(server.Choice().chosen, "paged");
  // reuse becomes the cheap one while four clients keep calling.
  burn_paged->store(kBurnNs);
  burn_reuse->store(0);
  wait_for([](const MemoryChoice& c) { return c.chosen == "reuse" && !c.in_trial; },
           "the switch to reuse");
  // More calls after the switch, then stop.
  const uint64_t at_switch = sent.load();
  while (sent.load() < at_switch + 100) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  stop = true;
  for (std::thread& client : clients) client.join();

  EXPECT_EQ(failed.load(), 0u) << failures[0] << failures[1] << failures[2] << failures[3];
  EXPECT_EQ(server.Calls(), sent.load());  // every call reached the handler and was answered
  const MemoryChoice choice = server.Choice();
  server.Stop();
  EXPECT_GE(choice.switches, 1u);
  bool switched = false;
  for (const auto& decision : choice.history) {
    switched = switched || (decision.from == "paged" && decision.to == "reuse");
  }
  EXPECT_TRUE(switched) << choice.reason;
  // Every pair either strategy handed out came back (the server releases a call's messages after
  // writing its reply, so only once it stopped).
  EXPECT_EQ(paged->stats().acquired, paged->stats().released);
  EXPECT_EQ(reuse->stats().acquired, reuse->stats().released);
  EXPECT_GT(paged->stats().acquired, 0u);
  EXPECT_GT(reuse->stats().acquired, 0u);
}

}  // namespace
}  // namespace arenarpc::memory
