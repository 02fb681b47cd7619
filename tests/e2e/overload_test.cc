// Overload: a one-thread server offered about three times what it can serve. With a fixed
// max_concurrency and with the adaptive one ("auto"), every call is either served or rejected with
// ELIMIT at once: none times out, and memory stays bounded. With the default options (no
// max_concurrency) calls that carry a deadline are refused while the queue ahead would outlast
// it, and calls whose deadline passed in the queue are answered without running their handler.

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <chrono>
#include <latch>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "load_support.h"
#include "process_rss.h"
#include "server_fixture.h"

namespace arenarpc::e2e {
namespace {

using Clock = std::chrono::steady_clock;

class OverloadTest : public ServerTest {
 protected:
  struct Outcome {
    std::map<int, int> by_code;  // 0 = served
    int calls = 0;
    std::vector<int64_t> served_latency_us;  // sorted
    int64_t ServedMedianUs() const {
      return served_latency_us.empty() ? 0 : served_latency_us[served_latency_us.size() / 2];
    }
  };

  // Open loop: `rate` async calls a second for `duration`, each blocking the server's thread for
  // `block_ms`, with the client's `timeout_ms`; waits for every reply.
  Outcome Offer(double rate, std::chrono::milliseconds duration, int block_ms,
                int timeout_ms = 3000, size_t message_bytes = 0) {
    ChannelOptions channel_options;
    channel_options.timeout_ms = timeout_ms;
    channel_options.deliver_timeout = true;  // the server sees each call's deadline
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
      call.request.set_message(message_bytes > 0 ? std::string(message_bytes, 'x') : "load");
      call.request.set_block_ms(block_ms);
      stub.Echo(&call.controller, &call.request, &call.response,
                google::protobuf::NewCallback(+[](std::latch* l) { l->count_down(); }, &done));
    }
    done.wait();
    Outcome outcome;
    outcome.calls = total;
    for (const Call& call : calls) {
      ++outcome.by_code[call.controller.ErrorCode()];
      if (!call.controller.Failed()) {
        outcome.served_latency_us.push_back(call.controller.latency_us());
      }
    }
    std::sort(outcome.served_latency_us.begin(), outcome.served_latency_us.end());
    return outcome;
  }

  // Default options (no max_concurrency, one thread) offered `rate` calls a second for 3 s, each
  // blocking the thread `block_ms`, requests of `message_bytes` (0: a short one), the client's
  // deadline 1 s: served or refused at once, hardly any timed out.
  Outcome ExpectDefaultOptionsServe(double rate, int block_ms, size_t message_bytes,
                                    int worker_threads = 0);

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
  const uint64_t rss_before = RssBytes();
  const Outcome outcome = Offer(kOfferedRate, kDuration, kBlockMs);
  ExpectServedOrRejected(outcome);
  if (kMeasuresRss) {
    EXPECT_LT(RssBytes(), rss_before + (64u << 20));
  }
  EXPECT_GT(server_->GetServerStats().rejected_limit, 0u);
}

TEST_P(OverloadTest, AutoMaxConcurrencyFindsASmallLimitAndRejectsTheExcess) {
  ServerOptions options;
  options.num_threads = 1;
  options.max_concurrency = "auto";
  StartServer(options);
  const uint64_t rss_before = RssBytes();
  const Outcome outcome = Offer(kOfferedRate, kDuration, kBlockMs);
  ExpectServedOrRejected(outcome);
  if (kMeasuresRss) {
    EXPECT_LT(RssBytes(), rss_before + (64u << 20));
  }
  // One thread: a call admitted beyond the one running only waits (a probe may add one).
  const ServerStats stats = server_->GetServerStats();
  EXPECT_GE(stats.concurrency_limit, 1);
  EXPECT_LE(stats.concurrency_limit, 2);
}

OverloadTest::Outcome OverloadTest::ExpectDefaultOptionsServe(double rate, int block_ms,
                                                              size_t message_bytes,
                                                              int worker_threads) {
  ServerOptions options;
  options.num_threads = 1;  // max_concurrency: the default, none
  options.worker_threads = worker_threads;
  StartServer(options);
  // Long enough that a queue growing at twice the service rate would outlast the timeout (the
  // queue before deadline-aware admission held ~1.4 s of calls after 1.5 s, and all later calls
  // timed out).
  constexpr std::chrono::milliseconds kLongDuration{3000};
  constexpr int kTimeoutMs = 1000;
  const Outcome outcome = Offer(rate, kLongDuration, block_ms, kTimeoutMs, message_bytes);
  const auto count = [&](int code) {
    return outcome.by_code.count(code) ? outcome.by_code.at(code) : 0;
  };
  const int served = count(0), rejected = count(ELIMIT), timed_out = count(ERPCTIMEDOUT);
  std::printf("offered %d calls: %d served, %d ELIMIT, %d timed out\n", outcome.calls, served,
              rejected, timed_out);
  for (const auto& [code, n] : outcome.by_code) {
    EXPECT_TRUE(code == 0 || code == ELIMIT || code == ERPCTIMEDOUT) << n << " failed with " << code;
  }
  // No call waited in the server past its deadline: refused at once instead (a margin for a
  // machine that stalls the server's thread for a moment: a TSan run on a loaded machine saw 75
  // of 4200; before deadline-aware admission most calls after the first second timed out).
  EXPECT_LE(timed_out, outcome.calls / 20) << "calls timed out in the queue";
  EXPECT_GT(rejected, outcome.calls / 4) << "3x overload refused too little";
  // A substantial share of what one thread serves (~1000/block_ms calls a second): the queue
  // kept it busy. (A loaded or sanitized machine serves less: a generous floor.)
  EXPECT_GT(served, static_cast<int>(kLongDuration.count() / block_ms) / 8);
  // Handlers ran for the served calls, and at most a few more (whose replies came too late).
  EXPECT_GE(service_->handler_calls(), served);
  EXPECT_LE(service_->handler_calls(), served + std::max(5, outcome.calls / 50));
  const ServerStats stats = server_->GetServerStats();
  EXPECT_GT(stats.rejected_queue_wait, 0u);
  EXPECT_LE(stats.rejected_queue_wait, stats.rejected_limit);
  return outcome;
}

TEST_P(OverloadTest, DefaultOptionsServeAtThreeTimesCapacityWithoutTimeouts) {
  const Outcome outcome = ExpectDefaultOptionsServe(kOfferedRate, kBlockMs, 0);
  // The backlog stood (every call waited past a few calls' service for 100 ms and more), so
  // admission held it to twice that target (standing_queue.h) instead of half the 1 s deadline:
  // the served calls waited tens of milliseconds, not ~500 ms as when only deadlines bounded it.
  std::printf("served calls' median latency: %lld us\n",
              static_cast<long long>(outcome.ServedMedianUs()));
  EXPECT_LT(outcome.ServedMedianUs(), 250'000);
}

// Large requests (128 KiB) at 3x, handlers on a thread of their own: the I/O thread decodes
// them as they come, so admission sees the queue and refuses what would wait past the deadline.
TEST_P(OverloadTest, DefaultOptionsServeLargeRequestsAtThreeTimesCapacityWithoutTimeouts) {
  constexpr int kLargeBlockMs = 5;  // ~200 calls/s
  ExpectDefaultOptionsServe(3 * 1000.0 / kLargeBlockMs, kLargeBlockMs, 128u << 10,
                            /*worker_threads=*/1);
}

// The same on one thread that runs the handlers between its reads. Requests larger than what a
// connection decoded per turn (the old 64 KiB slice) were decoded one per call run: the backlog
// never grew, admission refused none, and every request past the first second timed out (0 of
// 1800 refused, ~1370 timed out). A turn now decodes several while a call runs, so the queue
// grows and admission refuses. Not asserted here: no timeouts. A thread blocked in handlers reads
// each socket once per call, and Linux grows a socket's receive buffer only while its reader keeps
// up; on a loaded machine it stayed near 300 KB in some runs, fewer than the three requests per
// call offered, and the rest aged in the client's queue (docs/server.md "Overload").
TEST_P(OverloadTest, OneThreadDecodesLargeRequestsAheadOfItsCalls) {
  ServerOptions options;
  options.num_threads = 1;
  StartServer(options);
  constexpr int kLargeBlockMs = 5;
  const Outcome outcome =
      Offer(3 * 1000.0 / kLargeBlockMs, std::chrono::milliseconds(3000), kLargeBlockMs,
            /*timeout_ms=*/1000, 128u << 10);
  const auto count = [&](int code) {
    return outcome.by_code.count(code) ? outcome.by_code.at(code) : 0;
  };
  std::printf("offered %d calls: %d served, %d ELIMIT, %d timed out\n", outcome.calls, count(0),
              count(ELIMIT), count(ERPCTIMEDOUT));
  const ServerStats stats = server_->GetServerStats();
  EXPECT_GT(stats.rejected_queue_wait, static_cast<uint64_t>(outcome.calls / 20))
      << "admission saw no queue: large requests were not decoded ahead of the running call";
  EXPECT_GT(count(0), 3000 / kLargeBlockMs / 8);
}

TEST_P(OverloadTest, CallsWhoseDeadlinePassedInTheQueueDoNotRunTheirHandler) {
  ServerOptions options;
  options.num_threads = 1;
  StartServer(options);
  ChannelOptions channel_options;
  channel_options.deliver_timeout = true;
  auto channel = MakeChannel(channel_options);
  TestService_Stub stub(channel.get());
  {  // connected first, so that the burst's deadlines are spent in the server only
    Controller controller;
    TestRequest request;
    TestResponse response;
    request.set_message("warm-up");
    stub.Echo(&controller, &request, &response, nullptr);
    ASSERT_FALSE(controller.Failed()) << controller.ErrorText();
  }
  const int handlers_before = service_->handler_calls();
  // A burst behind one call that holds the one thread 300 ms: nothing leaves the queue
  // meanwhile, so the queue-wait estimate has no drain rate to refuse the others with at
  // admission; they are admitted together, and the ones whose 100 ms pass before the thread
  // reaches them are dropped there.
  constexpr int kCalls = 20;
  struct Call {
    Controller controller;
    TestRequest request;
    TestResponse response;
  };
  std::vector<Call> calls(kCalls);
  std::latch done(kCalls);
  for (Call& call : calls) {
    const bool first = &call == &calls.front();
    call.controller.set_timeout_ms(first ? 5000 : 100);
    call.request.set_message("burst");
    call.request.set_block_ms(first ? 300 : 20);
    stub.Echo(&call.controller, &call.request, &call.response,
              google::protobuf::NewCallback(+[](std::latch* l) { l->count_down(); }, &done));
  }
  done.wait();
  for (const Call& call : calls) {
    const int code = call.controller.ErrorCode();
    EXPECT_TRUE(code == 0 || code == ERPCTIMEDOUT || code == ELIMIT) << code;
  }
  // Every call ran its handler, was dropped as it reached the thread past its deadline, or was
  // refused at admission: the server's counts add up (once the last drop was answered) ...
  const auto settled = [&] {
    const ServerStats stats = server_->GetServerStats();
    return static_cast<uint64_t>(service_->handler_calls() - handlers_before) +
           stats.rejected_timed_out + stats.rejected_queue_wait;
  };
  for (const auto until = Clock::now() + std::chrono::seconds(10);
       settled() < static_cast<uint64_t>(kCalls) && Clock::now() < until;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(static_cast<uint64_t>(kCalls), settled());
  // ... and most did not run: the calls read with the first waited 300 ms behind it; those read
  // once it ended (the thread reads too) start their 100 ms then, and ~5 of them fit.
  EXPECT_LE(service_->handler_calls() - handlers_before, kCalls / 2);
  EXPECT_EQ(0, calls.front().controller.ErrorCode()) << calls.front().controller.ErrorText();
  EXPECT_GT(server_->GetServerStats().rejected_timed_out, 0u);
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
