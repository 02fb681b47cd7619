// The adaptive limit behind max_concurrency = "auto", fed with synthetic calls on a simulated
// clock: a CPU-bound server settles at its threads, one whose calls wait on a backend grows to what
// the backend takes, and calls that only queue never raise the limit.

#include "server/auto_concurrency_limiter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

namespace arenarpc::server {
namespace {

// Completes `calls_per_second` calls a second for `seconds`, each `service_us` long.
void Feed(AutoConcurrencyLimiter& limiter, int64_t* now_us, double calls_per_second,
          int64_t service_us, double seconds) {
  const int64_t step = static_cast<int64_t>(1e6 / calls_per_second);
  for (int64_t end = *now_us + static_cast<int64_t>(seconds * 1e6); *now_us < end;
       *now_us += step) {
    limiter.OnCallEnd(*now_us, service_us, true);
  }
}

// A server under more load than it can take, `seconds` long: it runs min(limit, can_run) calls
// at once, each `service_us` long (the limiter's limit is re-read every 50 ms).
void Saturate(AutoConcurrencyLimiter& limiter, int64_t* now_us, int can_run, int64_t service_us,
              double seconds) {
  for (double t = 0; t < seconds; t += 0.05) {
    const int running = std::min(limiter.limit(), can_run);
    Feed(limiter, now_us, running * 1e6 / static_cast<double>(service_us), service_us, 0.05);
  }
}

TEST(AutoConcurrencyLimiter, SettlesAtTheThreadsOfACpuBoundServer) {
  for (int threads : {1, 2, 4}) {
    AutoConcurrencyLimiter::Options options;
    options.min_limit = threads;
    AutoConcurrencyLimiter limiter(options);
    EXPECT_EQ(std::max(16, threads), limiter.limit());  // initial
    int64_t now = 1'000'000;
    // Handlers that each need a thread for 2 ms: more admitted calls only wait.
    Saturate(limiter, &now, threads, 2000, 10);
    EXPECT_EQ(threads, limiter.limit()) << threads << " threads";
  }
}

TEST(AutoConcurrencyLimiter, GrowsWhileMoreAdmittedCallsRunMore) {
  AutoConcurrencyLimiter::Options options;
  options.initial_limit = 4;
  AutoConcurrencyLimiter limiter(options);
  int64_t now = 1'000'000;
  // Handlers waiting 100 ms on a backend that takes 100 calls at once: the limit must climb from
  // 4 to what the backend takes, and not far past it.
  Saturate(limiter, &now, 100, 100'000, 20);
  EXPECT_GE(limiter.limit(), 100);
  EXPECT_LE(limiter.limit(), 130);
}

TEST(AutoConcurrencyLimiter, FailedCallsDoNotCount) {
  AutoConcurrencyLimiter::Options options;
  AutoConcurrencyLimiter limiter(options);
  for (int64_t now = 1'000'000; now < 3'000'000; now += 100) limiter.OnCallEnd(now, 50'000, false);
  EXPECT_EQ(options.initial_limit, limiter.limit());
}

TEST(AutoConcurrencyLimiter, StaysWithinItsBounds) {
  AutoConcurrencyLimiter::Options options;
  options.min_limit = 3;
  options.max_limit = 50;
  AutoConcurrencyLimiter limiter(options);
  int64_t now = 1'000'000;
  Feed(limiter, &now, 100, 100, 2);  // almost idle: 0.01 calls running
  EXPECT_EQ(3, limiter.limit());
  Saturate(limiter, &now, 1000, 100'000, 5);  // room for 1000 at once
  EXPECT_EQ(50, limiter.limit());
}

}  // namespace
}  // namespace arenarpc::server
