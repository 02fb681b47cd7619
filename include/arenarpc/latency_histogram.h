#pragma once
// LatencyHistogram: a fixed-size, lock-free histogram of non-negative integer latencies (µs),
// HdrHistogram-style log-linear buckets.
//
// Bucketing: values below 2^kSubBucketBits (256 µs) have one bucket each (exact). Above, every
// power-of-two range [2^e, 2^(e+1)) is split into 2^(kSubBucketBits-1) = 128 equal buckets, so a
// bucket is never wider than 1/128 of its lower bound. A percentile is reported as the midpoint of
// the bucket holding it, hence
//
//     |Percentile(p) - exact p-th percentile| <= kRelativeErrorBound * exact  (1/256 = 0.39 %),
//
// for every value up to kMaxTrackableUs (about 12.7 days); larger values are clamped to it.
// The result is also clamped to [Min(), Max()], which are tracked exactly.
//
// Thread safety: Record() is wait-free apart from a rare CAS loop on the max/min (relaxed atomics,
// ~3 atomic adds); any number of threads may Record() concurrently with each other and with the
// readers. Readers see an approximately consistent snapshot while writers run (counts may lag
// each other by the calls in flight); after writers stop, results are exact. For very hot shared
// use, give each thread its own histogram and Merge() them for reporting.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace arenarpc {

class LatencyHistogram {
 public:
  static constexpr int kSubBucketBits = 8;
  static constexpr int kMaxExponent = 40;  // values tracked up to 2^40 - 1 µs
  static constexpr int64_t kMaxTrackableUs = (int64_t{1} << kMaxExponent) - 1;
  static constexpr double kRelativeErrorBound = 1.0 / (1 << kSubBucketBits);
  static constexpr size_t kBucketCount =
      (size_t{1} << kSubBucketBits) +
      size_t(kMaxExponent - kSubBucketBits) * (size_t{1} << (kSubBucketBits - 1));

  LatencyHistogram() = default;
  // Copies are snapshots (each counter loaded once, relaxed).
  LatencyHistogram(const LatencyHistogram& other) { Merge(other); }
  LatencyHistogram& operator=(const LatencyHistogram& other);

  // Records one value; negative values count as 0, values above kMaxTrackableUs as that.
  void Record(int64_t us) noexcept { RecordN(us, 1); }
  // Records `count` occurrences of one value.
  void RecordN(int64_t us, uint64_t count) noexcept;

  // Value at `percentile` in [0, 100] (HdrHistogram convention: 99.9 = p99.9): the smallest
  // recorded value v such that at least ceil(percentile% of Count()) values are <= v, within the
  // relative error bound above. 0 when empty. Out-of-range arguments are clamped to [0, 100].
  int64_t Percentile(double percentile) const noexcept;
  uint64_t Count() const noexcept { return count_.load(std::memory_order_relaxed); }
  int64_t Max() const noexcept;   // exact; 0 when empty
  int64_t Min() const noexcept;   // exact; 0 when empty
  double Mean() const noexcept;   // exact (sum of clamped values / count); 0 when empty
  uint64_t Sum() const noexcept { return sum_.load(std::memory_order_relaxed); }

  // Adds every value recorded in `other` (which may be recorded into concurrently).
  void Merge(const LatencyHistogram& other) noexcept;
  // Forgets everything. Not atomic with respect to concurrent Record() calls: values recorded
  // while Reset() runs may be partly kept.
  void Reset() noexcept;

  // Bucket geometry, exposed for tests and exporters.
  static size_t BucketIndex(int64_t us) noexcept;
  static int64_t BucketLowest(size_t index) noexcept;   // smallest value in the bucket
  static int64_t BucketWidth(size_t index) noexcept;    // number of integer values it covers
  // Values recorded in bucket `index` (< kBucketCount).
  uint64_t BucketCount(size_t index) const noexcept {
    return buckets_[index].load(std::memory_order_relaxed);
  }

 private:
  static int64_t Clamp(int64_t us) noexcept {
    return us < 0 ? 0 : (us > kMaxTrackableUs ? kMaxTrackableUs : us);
  }
  void UpdateMinMax(int64_t us) noexcept;

  std::array<std::atomic<uint64_t>, kBucketCount> buckets_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_{0};
  std::atomic<int64_t> max_{-1};                 // -1: nothing recorded
  std::atomic<int64_t> min_{kMaxTrackableUs + 1};  // > any value: nothing recorded
};

}  // namespace arenarpc
