// Overload: a one-thread server offered about three times what it can serve. With a fixed
// max_concurrency and with the adaptive one ("auto"), every call is either served or rejected with
// ELIMIT at once: none times out, and memory stays bounded.

#include <atomic>
#include <cstdio>
#include <chrono>
#include <latch>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "load_support.h"
#include "server_fixture.h"

namespace arenarpc::e2e {
namespace {

using Clock = std::chrono::steady_clock;

class OverloadTest : public ServerTest {
 protected:
  struct Outcome {
    std::map<int, int> by_code;  // 0 = served
    int calls = 0;
  };

  // Open loop: `rate` async calls a second for `duration`, each blocking the server's thread for
  // `block_ms`; waits for every reply.
  Outcome Offer(double rate, std::chrono::milliseconds duration, int block_ms) {
    ChannelOptions channel_options;
    channel_options.timeout_ms = 3000;
    auto channel = MakeChannel(channel_options);
    TestService_Stub stub(channel.get());
    const int total = static_cast<int>(rate * duration.count() / 1000.0);
    struct Call {
      Controller controller;
      TestRequest request;
      TestResponse response;
    };
    std::vector<Call> calls(static_cast<size_t>(total));
    std::latch done(total);
    const auto start = Clock::now();
    for (int i = 0; i < total; ++i) {
      std::this_thread::sleep_until(start + std::chrono::microseconds(
                                                static_cast<int64_t>(i * 1e6 / rate)));
      Call& call = calls[static_cast<size_t>(i)];
      call.request.set_message("load");
      call.request.set_block_ms(block_ms);
      stub.Echo(&call.controller, &call.request, &call.response,
                google::protobuf::NewCallback(+[](std::latch* l) { l->count_down(); }, &done));
    }
    done.wait();
    Outcome outcome;
    outcome.calls = total;
    for (const Call& call : calls) ++outcome.by_code[call.controller.ErrorCode()];
    return outcome;
  }

  void ExpectServedOrRejected(const Outcome& outcome) {
    int served = outcome.by_code.count(0) ? outcome.by_code.at(0) : 0;
    int rejected = outcome.by_code.count(ELIMIT) ? outcome.by_code.at(ELIMIT) : 0;
    for (const auto& [code, count] : outcome.by_code) {
      EXPECT_TRUE(code == 0 || code == ELIMIT) << count << " calls failed with " << code;
    }
    EXPECT_EQ(outcome.calls, served + rejected);
    std::printf("offered %d calls: %d served, %d rejected with ELIMIT\n", outcome.calls, served,
                rejected);
    EXPECT_GT(rejected, outcome.calls / 4) << "3x overload rejected too little";
    // Both outcomes happened, and the server counted them as the client saw them. (How many were
    // served depends on how much CPU a loaded machine leaves the server's thread: no floor.)
    EXPECT_GT(served, 0);
    // A call is counted after its reply is out: poll (bounded) for the last ones.
    uint64_t counted = 0;
    for (const auto until = Clock::now() + std::chrono::seconds(5);
         (counted = server_->GetMethodStats("arenarpc.e2e.TestService.Echo").calls) !=
             static_cast<uint64_t>(served) &&
         Clock::now() < until;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    EXPECT_EQ(static_cast<uint64_t>(served), counted);
    EXPECT_EQ(static_cast<uint64_t>(rejected),
              StatSoon(&ServerStats::rejected_limit, static_cast<uint64_t>(rejected)));
  }
};
INSTANTIATE_TEST_SUITE_P(Heap, OverloadTest, ::testing::Values("heap"), ModeName);

constexpr int kBlockMs = 2;                                   // ~400-500 calls/s on one thread
constexpr double kOfferedRate = 1400;                         // ~3x that
constexpr std::chrono::milliseconds kDuration{2000};

TEST_P(OverloadTest, FixedMaxConcurrencyRejectsTheExcessAtOnce) {
  ServerOptions options;
  options.num_threads = 1;
  options.max_concurrency = 4;
  StartServer(options);
  const size_t rss_before = ResidentBytes();
  const Outcome outcome = Offer(kOfferedRate, kDuration, kBlockMs);
  ExpectServedOrRejected(outcome);
  if (kResidentSizeIsMeaningful) EXPECT_LT(ResidentBytes(), rss_before + (64u << 20));
  EXPECT_GT(server_->GetServerStats().rejected_limit, 0u);
}

TEST_P(OverloadTest, AutoMaxConcurrencyFindsASmallLimitAndRejectsTheExcess) {
  ServerOptions options;
  options.num_threads = 1;
  options.max_concurrency = "auto";
  StartServer(options);
  const size_t rss_before = ResidentBytes();
  const Outcome outcome = Offer(kOfferedRate, kDuration, kBlockMs);
  ExpectServedOrRejected(outcome);
  if (kResidentSizeIsMeaningful) EXPECT_LT(ResidentBytes(), rss_before + (64u << 20));
  // One thread: a call admitted beyond the one running only waits (a probe may add one).
  const ServerStats stats = server_->GetServerStats();
  EXPECT_GE(stats.concurrency_limit, 1);
  EXPECT_LE(stats.concurrency_limit, 2);
}

TEST_P(OverloadTest, InvalidMaxConcurrencyFailsStartNamingIt) {
  ServerOptions options;
  options.max_concurrency = "fast";
  auto server = std::make_unique<Server>();
  TestServiceImpl service;
  ASSERT_EQ(0, server->AddService(&service, SERVER_DOESNT_OWN_SERVICE));
  EXPECT_EQ(-1, server->Start("127.0.0.1:0", options));
  EXPECT_NE(std::string::npos, server->last_error().find("max_concurrency=fast is invalid"))
      << server->last_error();
}

}  // namespace
}  // namespace arenarpc::e2e
