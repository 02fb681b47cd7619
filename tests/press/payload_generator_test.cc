// The generator matches the workload of docs/benchmarks.md: each count is U[0, n), drawn
// independently.
#include "echo/payload_generator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace arenarpc::example {
namespace {

struct Moments {
  double sum = 0, sum_sq = 0;
  uint64_t n = 0;
  uint64_t max = 0;
  std::vector<uint64_t> histogram;
  void Add(uint64_t v) {
    sum += double(v), sum_sq += double(v) * double(v), ++n;
    max = std::max(max, v);
    if (histogram.size() <= v) histogram.resize(v + 1);
    ++histogram[v];
  }
  double mean() const { return sum / double(n); }
};

// Mean of U[0, n) is (n-1)/2, variance (n^2-1)/12: the sample mean must be within 5 standard errors.
void ExpectUniformBelow(const Moments& m, uint64_t bound, const char* what) {
  ASSERT_GT(m.n, 0u) << what;
  const double mean = (double(bound) - 1) / 2;
  const double stderr_ = std::sqrt((double(bound) * double(bound) - 1) / 12 / double(m.n));
  EXPECT_NEAR(m.mean(), mean, 5 * stderr_ + 1e-9) << what;
  EXPECT_LT(m.max, bound) << what;  // never reaches n
  // Every value in [0, n) shows up about equally often (each within 25 % of n_samples / bound,
  // checked only when that expectation is large enough to be stable).
  const double expected = double(m.n) / double(bound);
  if (expected >= 400) {
    ASSERT_EQ(m.histogram.size(), bound) << what;
    for (uint64_t v = 0; v < bound; ++v) {
      EXPECT_NEAR(double(m.histogram[v]), expected, 0.25 * expected) << what << " value " << v;
    }
  }
}

struct Draws {
  Moments results, items_per_result, terms_per_result, terms_per_item, term_length;
  double strings = 0, bytes = 0;
};

Draws Draw(int scale, int payloads, uint64_t seed) {
  PayloadGenerator generator(scale, seed);
  Draws d;
  for (int i = 0; i < payloads; ++i) {
    ComplexPayload payload;
    generator.Fill(&payload);
    d.results.Add(payload.result_size());
    for (const Result& r : payload.result()) {
      d.items_per_result.Add(r.item_size());
      d.terms_per_result.Add(r.term_size());
      EXPECT_EQ(r.item_size(), r.term_size()) << "k items and k result-level terms";
      for (const auto& t : r.term()) d.term_length.Add(t.size());
      for (const Item& item : r.item()) {
        d.terms_per_item.Add(item.term_size());
        for (const auto& t : item.term()) d.term_length.Add(t.size());
      }
    }
    d.strings += double(d.term_length.n);
    d.bytes += double(payload.ByteSizeLong());
  }
  d.strings = double(d.term_length.n) / payloads;
  d.bytes /= payloads;
  return d;
}

TEST(PayloadGenerator, DistributionsMatchWorkloadAtScale5) {
  const int s = 5;
  const Draws d = Draw(s, 2000, 1);
  ExpectUniformBelow(d.results, 10 * s, "results per payload");
  ExpectUniformBelow(d.items_per_result, s, "items per result");
  ExpectUniformBelow(d.terms_per_item, 10 * s, "terms per item");
  ExpectUniformBelow(d.term_length, 2 * s, "term length");
  // Strings per payload: E[R] * (E[k] + E[k] * E[T]) = 24.5 * (2 + 2 * 24.5) = 1249.5
  // (docs/benchmarks.md: ~1,300 at s=5).
  EXPECT_NEAR(d.strings, 1249.5, 1249.5 * 0.06);
}

TEST(PayloadGenerator, SizeMatchesWorkloadAtScale10) {
  const Draws d = Draw(10, 120, 2);
  // E[strings] = 49.5 * (4.5 + 4.5 * 49.5) = 11,249 (docs/benchmarks.md: ~11,700 over 300 draws).
  EXPECT_NEAR(d.strings, 11249.0, 11249.0 * 0.12);
  // Each string is ~9.5 bytes + 2 bytes of tag and length: ~136 KB serialized, as published.
  EXPECT_GT(d.bytes, 110'000);
  EXPECT_LT(d.bytes, 160'000);
  ExpectUniformBelow(d.term_length, 20, "term length");
  // "Most terms are <= 15 bytes, a quarter are longer": lengths 16..19 are 4 of 20 values.
  uint64_t longer = 0;
  for (size_t v = 16; v < d.term_length.histogram.size(); ++v) longer += d.term_length.histogram[v];
  EXPECT_NEAR(double(longer) / double(d.term_length.n), 0.2, 0.02);
}

TEST(PayloadGenerator, SeedsAreReproducibleAndDistinct) {
  PayloadGenerator a(10, 99), b(10, 99), c(10, 100);
  ComplexPayload pa, pb, pc;
  a.Fill(&pa);
  b.Fill(&pb);
  c.Fill(&pc);
  EXPECT_EQ(pa.SerializeAsString(), pb.SerializeAsString());
  EXPECT_NE(pa.SerializeAsString(), pc.SerializeAsString());
}

TEST(PayloadGenerator, RejectsNonPositiveScale) {
  EXPECT_THROW(PayloadGenerator(0), std::invalid_argument);
  EXPECT_THROW(PayloadGenerator(-3), std::invalid_argument);
}

}  // namespace
}  // namespace arenarpc::example
