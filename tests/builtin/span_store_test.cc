// The rpcz span store's bounds: the latest ring by count and bytes under 100k spans, the slowest
// view keeps the N slowest, the failed view the latest failures; and SpanRecord's own bounds.
#include "stats/span_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "call/span_record.h"

namespace arenarpc::stats {
namespace {

std::shared_ptr<const Span> MakeSpan(int64_t latency_us, int error_code, std::string method,
                                     size_t text_bytes = 0) {
  auto span = std::make_shared<Span>();
  span->method = std::move(method);
  span->latency = std::chrono::microseconds(latency_us);
  span->error_code = error_code;
  span->error_text = std::string(text_bytes, 'e');
  span->trace.trace_id = static_cast<uint64_t>(latency_us) + 1;
  return span;
}

TEST(SpanStore, HoldsItsBoundsUnder100kSpans) {
  SpanStore::Limits limits;
  limits.max_latest = 500;
  limits.max_latest_bytes = 200 * 1024;
  limits.max_slowest = 10;
  limits.max_failed = 20;
  SpanStore store(limits);
  size_t max_bytes_seen = 0;
  for (int i = 0; i < 100000; ++i) {
    // Latencies 0..99999 in a shuffled order (a multiplicative permutation mod 100000).
    const int64_t latency = (static_cast<int64_t>(i) * 7919) % 100000;
    store.Add(MakeSpan(latency, i % 100 == 0 ? 5 : 0, "m", (i % 7) * 100));
    const SpanStore::Counts counts = store.counts();
    ASSERT_LE(counts.latest, limits.max_latest);
    ASSERT_LE(counts.latest_bytes, limits.max_latest_bytes);
    max_bytes_seen = std::max(max_bytes_seen, counts.latest_bytes);
  }
  const SpanStore::Counts counts = store.counts();
  EXPECT_EQ(100000u, counts.added);
  EXPECT_EQ(100000u - counts.latest, counts.evicted);
  EXPECT_EQ(10u, counts.slowest);
  EXPECT_EQ(20u, counts.failed);
  EXPECT_GT(max_bytes_seen, limits.max_latest_bytes / 2);

  SpanStore::Query slowest;
  slowest.view = SpanStore::View::kSlowest;
  const auto top = store.Find(slowest);
  ASSERT_EQ(10u, top.size());
  for (size_t i = 0; i < top.size(); ++i) {
    EXPECT_EQ(std::chrono::microseconds(99999 - static_cast<int64_t>(i)), top[i]->latency);
  }
  SpanStore::Query failed;
  failed.view = SpanStore::View::kFailed;
  const auto failures = store.Find(failed);
  ASSERT_EQ(20u, failures.size());
  for (const auto& span : failures) EXPECT_EQ(5, span->error_code);
  // Newest first: the last failure added was span 99900.
  EXPECT_EQ(std::chrono::microseconds((99900ll * 7919) % 100000), failures[0]->latency);
}

TEST(SpanStore, FiltersByMethodLatencyErrorAndTrace) {
  SpanStore store(SpanStore::Limits{});
  store.Add(MakeSpan(10, 0, "a"));
  store.Add(MakeSpan(2000, 0, "b"));
  store.Add(MakeSpan(3000, 7, "a"));
  SpanStore::Query query;
  query.method = "a";
  EXPECT_EQ(2u, store.Find(query).size());
  query.min_latency = std::chrono::milliseconds(1);
  ASSERT_EQ(1u, store.Find(query).size());
  EXPECT_EQ(7, store.Find(query)[0]->error_code);
  SpanStore::Query failed_only;
  failed_only.failed_only = true;
  EXPECT_EQ(1u, store.Find(failed_only).size());
  SpanStore::Query by_trace;
  by_trace.trace_id = std::make_pair(0ull, 2001ull);
  ASSERT_EQ(1u, store.Find(by_trace).size());
  EXPECT_EQ("b", store.Find(by_trace)[0]->method);
  EXPECT_EQ(1u, store.FindTrace(0, 11).size());
}

TEST(SpanRecord, BoundsAnnotationsAndIgnoresThemOnceFinished) {
  SpanStore::Default().Clear();
  internal::SpanRecord record(SpanKind::kServer, std::chrono::steady_clock::now());
  for (size_t i = 0; i < internal::SpanRecord::kMaxAnnotations + 5; ++i) {
    record.Annotate(std::string(2000, 'x'));
  }
  record.span().method = "bounded";
  record.Finish();
  record.Annotate("late");
  SpanStore::Query query;
  query.method = "bounded";
  const auto spans = SpanStore::Default().Find(query);
  ASSERT_EQ(1u, spans.size());
  EXPECT_EQ(internal::SpanRecord::kMaxAnnotations, spans[0]->annotations.size());
  EXPECT_EQ(5u, spans[0]->annotations_dropped);
  EXPECT_EQ(internal::SpanRecord::kMaxAnnotationBytes, spans[0]->annotations[0].text.size());
}

TEST(SpanRecord, AnnotationsFromManyThreadsWhileTheOwnerFinishes) {
  SpanStore::Default().Clear();
  internal::SpanRecord record(SpanKind::kServer, std::chrono::steady_clock::now());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) record.Annotate("a");
    });
  }
  record.Mark(SpanPhase::kParsed);
  record.span().method = "threads";
  record.Finish();
  for (auto& thread : threads) thread.join();
  // (Under TSan: a race is reported here if annotations and Finish() were not ordered.)
  SpanStore::Query query;
  query.method = "threads";
  const auto spans = SpanStore::Default().Find(query);
  ASSERT_EQ(1u, spans.size());
  EXPECT_LE(spans[0]->annotations.size(), internal::SpanRecord::kMaxAnnotations);
  EXPECT_LE(spans[0]->annotations.size() + spans[0]->annotations_dropped, 4000u);
}

}  // namespace
}  // namespace arenarpc::stats
