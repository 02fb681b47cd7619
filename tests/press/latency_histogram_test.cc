#include "arenarpc/latency_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

namespace arenarpc {
namespace {

int64_t ExactPercentile(std::vector<int64_t> sorted, double p) {
  const auto n = static_cast<uint64_t>(sorted.size());
  auto rank = static_cast<uint64_t>(std::ceil(p / 100.0 * static_cast<double>(n)));
  rank = std::clamp<uint64_t>(rank, 1, n);
  return sorted[rank - 1];
}

void ExpectWithinBound(const LatencyHistogram& h, std::vector<int64_t> values) {
  std::sort(values.begin(), values.end());
  for (double p : {0.0, 1.0, 10.0, 50.0, 80.0, 90.0, 99.0, 99.9, 99.99, 100.0}) {
    const int64_t exact = ExactPercentile(values, p);
    const int64_t got = h.Percentile(p);
    const double err = std::abs(double(got - exact));
    EXPECT_LE(err, LatencyHistogram::kRelativeErrorBound * double(exact))
        << "p" << p << " exact=" << exact << " got=" << got;
  }
}

TEST(LatencyHistogram, EmptyReportsZeros) {
  LatencyHistogram h;
  EXPECT_EQ(h.Count(), 0u);
  EXPECT_EQ(h.Percentile(99), 0);
  EXPECT_EQ(h.Max(), 0);
  EXPECT_EQ(h.Min(), 0);
  EXPECT_EQ(h.Mean(), 0.0);
}

TEST(LatencyHistogram, SmallValuesAreExact) {
  LatencyHistogram h;
  for (int v = 0; v < 256; ++v) h.Record(v);
  EXPECT_EQ(h.Count(), 256u);
  EXPECT_EQ(h.Percentile(50), 127);
  EXPECT_EQ(h.Percentile(100), 255);
  EXPECT_EQ(h.Percentile(0), 0);
  EXPECT_EQ(h.Max(), 255);
  EXPECT_DOUBLE_EQ(h.Mean(), 127.5);
}

TEST(LatencyHistogram, BucketGeometryIsContiguousAndBounded) {
  // Every bucket starts where the previous ended and is at most 1/128 of its lower bound wide.
  int64_t next = 0;
  for (size_t i = 0; i < LatencyHistogram::kBucketCount; ++i) {
    ASSERT_EQ(LatencyHistogram::BucketLowest(i), next) << i;
    const int64_t w = LatencyHistogram::BucketWidth(i);
    if (i >= 256) {
      ASSERT_LE(w * 128, LatencyHistogram::BucketLowest(i)) << i;
    }
    ASSERT_EQ(LatencyHistogram::BucketIndex(next), i);
    ASSERT_EQ(LatencyHistogram::BucketIndex(next + w - 1), i);
    next += w;
  }
  EXPECT_EQ(next - 1, LatencyHistogram::kMaxTrackableUs);
}

TEST(LatencyHistogram, PercentilesOfRandomDataWithinDocumentedBound) {
  std::mt19937_64 rng(42);
  // Log-normal latencies around 2 ms with a long tail, plus a uniform spread: both shapes.
  std::lognormal_distribution<double> lognormal(std::log(2000.0), 0.8);
  std::uniform_int_distribution<int64_t> uniform(0, 5'000'000);
  for (int shape = 0; shape < 2; ++shape) {
    LatencyHistogram h;
    std::vector<int64_t> values;
    for (int i = 0; i < 100'000; ++i) {
      const int64_t v = shape == 0 ? static_cast<int64_t>(lognormal(rng)) : uniform(rng);
      values.push_back(v);
      h.Record(v);
    }
    ExpectWithinBound(h, values);
    EXPECT_EQ(h.Max(), *std::max_element(values.begin(), values.end()));
    EXPECT_EQ(h.Min(), *std::min_element(values.begin(), values.end()));
    double sum = 0;
    for (auto v : values) sum += double(v);
    EXPECT_NEAR(h.Mean(), sum / double(values.size()), 1e-6 * sum / double(values.size()));
  }
}

TEST(LatencyHistogram, ClampsOutOfRangeValues) {
  LatencyHistogram h;
  h.Record(-5);
  h.Record(LatencyHistogram::kMaxTrackableUs + 1000);
  EXPECT_EQ(h.Count(), 2u);
  EXPECT_EQ(h.Min(), 0);
  EXPECT_EQ(h.Max(), LatencyHistogram::kMaxTrackableUs);
  EXPECT_EQ(h.Percentile(100), LatencyHistogram::kMaxTrackableUs);
  EXPECT_EQ(h.Percentile(std::nan("")), 0);
  EXPECT_EQ(h.Percentile(1e9), LatencyHistogram::kMaxTrackableUs);
}

TEST(LatencyHistogram, MergeEqualsRecordingEverything) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> dist(1, 1'000'000);
  LatencyHistogram a, b, all;
  std::vector<int64_t> values;
  for (int i = 0; i < 20'000; ++i) {
    const int64_t v = dist(rng);
    values.push_back(v);
    (i % 3 == 0 ? a : b).Record(v);
    all.Record(v);
  }
  a.Merge(b);
  EXPECT_EQ(a.Count(), all.Count());
  EXPECT_EQ(a.Sum(), all.Sum());
  EXPECT_EQ(a.Max(), all.Max());
  EXPECT_EQ(a.Min(), all.Min());
  for (double p : {50.0, 90.0, 99.0, 99.9}) EXPECT_EQ(a.Percentile(p), all.Percentile(p));
  ExpectWithinBound(a, values);

  LatencyHistogram copy = a;  // snapshot
  a.Reset();
  EXPECT_EQ(a.Count(), 0u);
  EXPECT_EQ(a.Max(), 0);
  EXPECT_EQ(copy.Count(), all.Count());
  EXPECT_EQ(copy.Percentile(99), all.Percentile(99));
  a = copy;
  EXPECT_EQ(a.Percentile(50), all.Percentile(50));
}

TEST(LatencyHistogram, RecordNCountsRepeats) {
  LatencyHistogram h;
  h.RecordN(1000, 99);
  h.RecordN(50'000, 1);
  h.RecordN(7, 0);  // no-op
  EXPECT_EQ(h.Count(), 100u);
  EXPECT_EQ(h.Min(), 1000);
  EXPECT_NEAR(double(h.Percentile(99)), 1000.0, 1000.0 / 256);
  EXPECT_EQ(h.Percentile(100), 50'000);
}

TEST(LatencyHistogram, ConcurrentRecordLosesNothing) {
  LatencyHistogram h;
  constexpr int kThreads = 4, kPerThread = 50'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&h, t] {
      for (int i = 0; i < kPerThread; ++i) h.Record(int64_t(t) * 100'000 + i);
    });
  }
  // A reader running alongside must not crash or return out-of-range values.
  for (int i = 0; i < 50; ++i) {
    const int64_t p = h.Percentile(99);
    EXPECT_GE(p, 0);
    EXPECT_LE(p, int64_t(kThreads) * 100'000);
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(h.Count(), uint64_t(kThreads) * kPerThread);
  EXPECT_EQ(h.Max(), int64_t(kThreads - 1) * 100'000 + kPerThread - 1);
  EXPECT_EQ(h.Min(), 0);
  uint64_t expected_sum = 0;
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kPerThread; ++i) expected_sum += uint64_t(t) * 100'000 + i;
  EXPECT_EQ(h.Sum(), expected_sum);
}

}  // namespace
}  // namespace arenarpc
