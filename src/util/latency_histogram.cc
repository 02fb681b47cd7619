#include "arenarpc/latency_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace arenarpc {
namespace {

constexpr int kS = LatencyHistogram::kSubBucketBits;
constexpr uint64_t kLinear = uint64_t{1} << kS;             // exact buckets below this value
constexpr uint64_t kHalf = uint64_t{1} << (kS - 1);          // buckets per power of two above

}  // namespace

size_t LatencyHistogram::BucketIndex(int64_t us) noexcept {
  const auto v = static_cast<uint64_t>(Clamp(us));
  if (v < kLinear) return v;
  const int e = std::bit_width(v) - 1;  // 2^e <= v < 2^(e+1), e >= kS
  const int shift = e - kS + 1;         // bucket width in this octave is 2^shift
  return kLinear + size_t(e - kS) * kHalf + ((v >> shift) - kHalf);
}

int64_t LatencyHistogram::BucketLowest(size_t index) noexcept {
  if (index < kLinear) return static_cast<int64_t>(index);
  const size_t octave = (index - kLinear) / kHalf;  // e - kS
  const uint64_t sub = (index - kLinear) % kHalf + kHalf;
  return static_cast<int64_t>(sub << (octave + 1));
}

int64_t LatencyHistogram::BucketWidth(size_t index) noexcept {
  if (index < kLinear) return 1;
  return int64_t{1} << ((index - kLinear) / kHalf + 1);
}

LatencyHistogram& LatencyHistogram::operator=(const LatencyHistogram& other) {
  if (this != &other) {
    Reset();
    Merge(other);
  }
  return *this;
}

void LatencyHistogram::UpdateMinMax(int64_t v) noexcept {
  int64_t seen = max_.load(std::memory_order_relaxed);
  while (v > seen && !max_.compare_exchange_weak(seen, v, std::memory_order_relaxed)) {
  }
  seen = min_.load(std::memory_order_relaxed);
  while (v < seen && !min_.compare_exchange_weak(seen, v, std::memory_order_relaxed)) {
  }
}

void LatencyHistogram::RecordN(int64_t us, uint64_t count) noexcept {
  if (count == 0) return;
  const int64_t v = Clamp(us);
  buckets_[BucketIndex(v)].fetch_add(count, std::memory_order_relaxed);
  sum_.fetch_add(static_cast<uint64_t>(v) * count, std::memory_order_relaxed);
  count_.fetch_add(count, std::memory_order_relaxed);
  UpdateMinMax(v);
}

int64_t LatencyHistogram::Max() const noexcept {
  return std::max<int64_t>(0, max_.load(std::memory_order_relaxed));
}

int64_t LatencyHistogram::Min() const noexcept {
  const int64_t m = min_.load(std::memory_order_relaxed);
  return m > kMaxTrackableUs ? 0 : m;
}

double LatencyHistogram::Mean() const noexcept {
  const uint64_t n = Count();
  return n == 0 ? 0.0 : static_cast<double>(Sum()) / static_cast<double>(n);
}

int64_t LatencyHistogram::Percentile(double percentile) const noexcept {
  // Sum the buckets rather than trusting count_: with writers running the two may differ.
  uint64_t total = 0;
  for (const auto& b : buckets_) total += b.load(std::memory_order_relaxed);
  if (total == 0) return 0;
  if (!(percentile > 0)) percentile = 0;  // also maps NaN to 0
  if (percentile > 100) percentile = 100;
  auto rank = static_cast<uint64_t>(std::ceil(percentile / 100.0 * static_cast<double>(total)));
  rank = std::clamp<uint64_t>(rank, 1, total);
  // The extremes are tracked exactly: p0 and p100 need no bucket estimate.
  if (rank == total && total == Count()) return Max();
  if (rank == 1) return Min();
  uint64_t seen = 0;
  size_t index = 0;
  for (; index < kBucketCount; ++index) {
    seen += buckets_[index].load(std::memory_order_relaxed);
    if (seen >= rank) break;
  }
  if (index == kBucketCount) index = kBucketCount - 1;  // raced with Reset(): stay in range
  const int64_t mid = BucketLowest(index) + BucketWidth(index) / 2;
  const int64_t lo = Min(), hi = Max();
  return hi >= lo ? std::clamp(mid, lo, hi) : mid;
}

void LatencyHistogram::Merge(const LatencyHistogram& other) noexcept {
  for (size_t i = 0; i < kBucketCount; ++i) {
    const uint64_t n = other.buckets_[i].load(std::memory_order_relaxed);
    if (n != 0) buckets_[i].fetch_add(n, std::memory_order_relaxed);
  }
  count_.fetch_add(other.count_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  sum_.fetch_add(other.sum_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  const int64_t other_max = other.max_.load(std::memory_order_relaxed);
  const int64_t other_min = other.min_.load(std::memory_order_relaxed);
  if (other_max >= 0) UpdateMinMax(other_max);
  if (other_min <= kMaxTrackableUs) UpdateMinMax(other_min);
}

void LatencyHistogram::Reset() noexcept {
  for (auto& b : buckets_) b.store(0, std::memory_order_relaxed);
  count_.store(0, std::memory_order_relaxed);
  sum_.store(0, std::memory_order_relaxed);
  max_.store(-1, std::memory_order_relaxed);
  min_.store(kMaxTrackableUs + 1, std::memory_order_relaxed);
}

}  // namespace arenarpc
