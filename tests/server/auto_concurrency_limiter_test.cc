// The adaptive limit behind max_concurrency = "auto", fed with synthetic calls on a simulated
// clock: it settles near rate x service time plus its margin, grows while the limit binds and
// capacity is left, and does not climb when calls queue.

#include "server/auto_concurrency_limiter.h"

#include <gtest/gtest.h>

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

TEST(AutoConcurrencyLimiter, SettlesAtRateTimesServiceTimePlusMargin) {
  AutoConcurrencyLimiter::Options options;
  options.min_limit = 2;
  AutoConcurrencyLimiter limiter(options);
  EXPECT_EQ(16, limiter.limit());  // initial
  int64_t now = 1'000'000;
  // A saturated one-thread server: 500 calls/s of 2 ms each.
  Feed(limiter, &now, 500, 2000, 3);
  EXPECT_EQ(2, limiter.limit());  // ceil(500 * 0.002 * 1.3) = 2
  // Eight threads of 10 ms calls: 800 calls/s -> ceil(800 * 0.01 * 1.3) = 11.
  Feed(limiter, &now, 800, 10'000, 5);
  EXPECT_EQ(11, limiter.limit());
}

TEST(AutoConcurrencyLimiter, GrowsWhileTheLimitBindsAndCapacityIsLeft) {
  AutoConcurrencyLimiter::Options options;
  options.min_limit = 2;
  options.initial_limit = 4;
  AutoConcurrencyLimiter limiter(options);
  int64_t now = 1'000'000;
  // A handler waiting 100 ms on a backend: with `limit` calls in flight the server completes
  // limit / 0.1 s calls a second. The limit must climb to what the offered 1000 calls/s need.
  for (int window = 0; window < 40; ++window) {
    const double rate = std::min(1000.0, limiter.limit() / 0.1);
    Feed(limiter, &now, rate, 100'000, 0.2);
  }
  EXPECT_GE(limiter.limit(), 100);  // 1000 calls/s x 0.1 s
  EXPECT_LE(limiter.limit(), 140);  // plus the 30 % margin at most
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
  Feed(limiter, &now, 100, 100, 2);  // tiny: 100 x 0.0001 s
  EXPECT_EQ(3, limiter.limit());
  Feed(limiter, &now, 10'000, 100'000, 2);  // huge: 10000 x 0.1 s
  EXPECT_EQ(50, limiter.limit());
}

}  // namespace
}  // namespace arenarpc::server
