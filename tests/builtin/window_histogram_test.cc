#include "stats/window_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include "stats/error_counts.h"

namespace arenarpc::stats {
namespace {

using Clock = WindowedLatency::Clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

// A whole second of the steady clock, far from its epoch, as "now" for synthetic records.
const Clock::time_point kStart{seconds(100000)};

TEST(CoarseBucketsTest, EveryValueFallsInTheBucketThatCoversIt) {
  std::mt19937_64 random(7);
  for (int i = 0; i < 100000; ++i) {
    const int64_t v = static_cast<int64_t>(random() % (uint64_t{1} << (i % 32 + 1)));
    const size_t index = CoarseBuckets::Index(v);
    ASSERT_LT(index, CoarseBuckets::kCount);
    ASSERT_LE(CoarseBuckets::Lowest(index), v);
    ASSERT_LT(v, CoarseBuckets::Lowest(index) + CoarseBuckets::Width(index)) << v;
    // A bucket is at most 1/32 of its lower bound wide (exact below 32).
    if (v >= 32) {
      ASSERT_LE(CoarseBuckets::Width(index) * 16, CoarseBuckets::Lowest(index)) << v;
    }
  }
  EXPECT_EQ(CoarseBuckets::kCount - 1, CoarseBuckets::Index(CoarseBuckets::kMaxTrackableUs));
  EXPECT_EQ(CoarseBuckets::kCount - 1, CoarseBuckets::Index(int64_t{1} << 50));  // clamped
  EXPECT_EQ(0u, CoarseBuckets::Index(-5));
}

TEST(WindowedLatencyTest, PercentilesOfAWindowAreWithinTheBoundOfTheExactOnes) {
  WindowedLatency window(kStart);
  std::mt19937_64 random(1);
  std::lognormal_distribution<double> latency(6.0, 1.2);  // median ~400 µs, long tail
  std::vector<int64_t> values;
  for (int i = 0; i < 20000; ++i) {
    const auto v = static_cast<int64_t>(latency(random));
    values.push_back(v);
    window.Record(kStart + milliseconds(i % 5000), v, false);  // spread over 5 seconds
  }
  std::sort(values.begin(), values.end());
  const WindowSnapshot snapshot = window.Snapshot(kStart + milliseconds(5500), 10);
  ASSERT_EQ(values.size(), snapshot.count);
  EXPECT_EQ(values.back(), snapshot.max_us);
  for (double p : {50.0, 90.0, 99.0, 99.9}) {
    const auto rank = static_cast<size_t>(std::ceil(p / 100 * values.size())) - 1;
    const double exact = static_cast<double>(values[rank]);
    EXPECT_NEAR(exact, static_cast<double>(snapshot.Percentile(p)), exact / 32 + 1) << "p" << p;
  }
  EXPECT_EQ(values.back(), snapshot.Percentile(100));
}

TEST(WindowedLatencyTest, WindowsHoldOnlyTheirLastSeconds) {
  WindowedLatency window(kStart);
  // One call a second for 70 seconds, latency = its second (1..70 ms).
  for (int s = 0; s < 70; ++s) {
    window.Record(kStart + seconds(s) + milliseconds(10), (s + 1) * 1000, s % 2 == 0);
  }
  const auto now = kStart + seconds(69) + milliseconds(500);
  const WindowSnapshot last10 = window.Snapshot(now, 10);
  EXPECT_EQ(10u, last10.count);    // seconds 60..69
  EXPECT_EQ(5u, last10.errors);
  EXPECT_NEAR(61000, last10.Percentile(0), 61000 / 32);
  EXPECT_EQ(70000, last10.max_us);
  EXPECT_NEAR(9.5, last10.seconds, 1e-6);
  EXPECT_NEAR(10 / 9.5, last10.qps(), 1e-6);
  const WindowSnapshot last60 = window.Snapshot(now, 60);
  EXPECT_EQ(60u, last60.count);    // seconds 10..69
  EXPECT_EQ(70000, last60.max_us);
  // Seconds that passed without calls leave the window empty, whatever the ring held before.
  const WindowSnapshot later = window.Snapshot(now + seconds(64), 60);
  EXPECT_EQ(0u, later.count);
  EXPECT_EQ(0, later.Percentile(99));
  // The counts per second, oldest first.
  const auto per_second = window.CountsPerSecond<5>(now);
  for (uint64_t n : per_second) EXPECT_EQ(1u, n);
}

TEST(WindowedLatencyTest, AReusedSlotForgetsItsOldSecond) {
  WindowedLatency window(kStart);
  window.Record(kStart, 5000, true);
  // 64 s later the same slot serves a new second: the old call must not count.
  window.Record(kStart + seconds(64), 10, false);
  const WindowSnapshot snapshot = window.Snapshot(kStart + seconds(64), 60);
  EXPECT_EQ(1u, snapshot.count);
  EXPECT_EQ(0u, snapshot.errors);
  EXPECT_EQ(10, snapshot.max_us);
  // A writer that stalled past a whole ring is dropped rather than counted in the new second.
  window.Record(kStart, 7777, false);
  EXPECT_EQ(1u, window.Snapshot(kStart + seconds(64), 60).count);
}

TEST(WindowedLatencyTest, RateRightAfterCreationCoversOnlyTheTimeAlive) {
  WindowedLatency window(kStart);
  for (int i = 0; i < 30; ++i) window.Record(kStart + milliseconds(100 * i), 100, false);
  // 3 s alive: 30 calls / 3 s, not / 10 s.
  const WindowSnapshot snapshot = window.Snapshot(kStart + seconds(3), 10);
  EXPECT_NEAR(3.0, snapshot.seconds, 1e-6);
  EXPECT_NEAR(10.0, snapshot.qps(), 1e-6);
}

TEST(WindowedLatencyTest, ConcurrentRecordsAreAllCounted) {
  WindowedLatency window;
  constexpr int kThreads = 4, kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&window, t] {
      for (int i = 0; i < kPerThread; ++i) {
        window.Record(Clock::now(), i % 1000 + t, i % 10 == 0);
      }
    });
  }
  // A reader runs alongside the writers.
  uint64_t seen = 0;
  for (int i = 0; i < 50; ++i) seen = std::max(seen, window.Snapshot(Clock::now(), 60).count);
  for (auto& thread : threads) thread.join();
  const WindowSnapshot snapshot = window.Snapshot(Clock::now(), 60);
  EXPECT_EQ(uint64_t{kThreads} * kPerThread, snapshot.count);
  EXPECT_EQ(uint64_t{kThreads} * kPerThread / 10, snapshot.errors);
  EXPECT_LE(seen, snapshot.count);
  EXPECT_EQ(999 + kThreads - 1, snapshot.max_us);
}

TEST(ErrorCountsTest, CountsBrpcCodesApartAndOthersTogether) {
  ErrorCounts counts;
  EXPECT_TRUE(counts.NonZero().empty());
  counts.Count(1003);
  counts.Count(1003);
  counts.Count(2004);
  counts.Count(42);
  counts.Count(-7);
  const auto nonzero = counts.NonZero();
  ASSERT_EQ(3u, nonzero.size());
  EXPECT_EQ(std::make_pair(1003, uint64_t{2}), nonzero[0]);
  EXPECT_EQ(std::make_pair(2004, uint64_t{1}), nonzero[1]);
  EXPECT_EQ(std::make_pair(ErrorCounts::kOtherCode, uint64_t{2}), nonzero[2]);
}

}  // namespace
}  // namespace arenarpc::stats
