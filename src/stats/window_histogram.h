#pragma once
// WindowedLatency: calls, errors and latencies of the last seconds, as a ring of per-second slots
// merged on read. The slots use LatencyHistogram's log-linear scheme with fewer sub-buckets
// (kSubBucketBits = 5: a bucket is at most 1/32 of its lower bound wide, so a reported percentile
// is within 1/32 = 3.1 % of the exact one) and 32-bit counts, to keep a method's ring small
// (sizeof(WindowedLatency), about 118 KiB; docs/observability.md).
//
// Record() is lock-free: a load of the slot's second, a bucket add, a sum add, and a max update
// that rarely loops. The first call of each second in a slot last used 64 s ago clears it under a
// mutex (once per second per method). Readers merge the slots of the window they ask for.

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace arenarpc::stats {

// Bucket geometry of the window slots.
struct CoarseBuckets {
  static constexpr int kSubBucketBits = 5;
  static constexpr int kMaxExponent = 32;  // values up to 2^32 - 1 µs (71 min); larger are clamped
  static constexpr int64_t kMaxTrackableUs = (int64_t{1} << kMaxExponent) - 1;
  static constexpr size_t kCount =
      (size_t{1} << kSubBucketBits) +
      size_t(kMaxExponent - kSubBucketBits) * (size_t{1} << (kSubBucketBits - 1));

  static size_t Index(int64_t us) noexcept;
  static int64_t Lowest(size_t index) noexcept;
  static int64_t Width(size_t index) noexcept;
};

// What a window held: counts and merged buckets, and percentiles read from them.
struct WindowSnapshot {
  uint64_t count = 0;   // calls that ended in the window
  uint64_t errors = 0;  // ... of which failed
  uint64_t sum_us = 0;
  int64_t max_us = 0;
  double seconds = 0;   // the time the window covers (shorter right after the start)
  std::array<uint64_t, CoarseBuckets::kCount> buckets{};

  double qps() const noexcept { return seconds > 0 ? static_cast<double>(count) / seconds : 0; }
  double mean_us() const noexcept {
    return count == 0 ? 0 : static_cast<double>(sum_us) / static_cast<double>(count);
  }
  // The smallest value with at least ceil(p% of count) values at or below it (bucket midpoint,
  // clamped to max_us); 0 when empty.
  int64_t Percentile(double percentile) const noexcept;
};

class WindowedLatency {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kSlots = 64;          // a power of two above the longest window
  static constexpr int kMaxWindowSeconds = 60;

  explicit WindowedLatency(Clock::time_point created = Clock::now()) : created_(created) {}
  WindowedLatency(const WindowedLatency&) = delete;
  WindowedLatency& operator=(const WindowedLatency&) = delete;

  // One call that ended at `now`.
  void Record(Clock::time_point now, int64_t latency_us, bool failed) noexcept;

  // The last `seconds` (1..kMaxWindowSeconds) up to `now`: the current, partial second and the
  // seconds - 1 before it.
  WindowSnapshot Snapshot(Clock::time_point now, int seconds) const noexcept;
  // Calls that ended in each of the last `n` whole seconds before now's, oldest first (n <= 60).
  template <size_t N>
  std::array<uint64_t, N> CountsPerSecond(Clock::time_point now) const noexcept;

 private:
  struct Slot {
    std::atomic<int64_t> second{-1};  // which second (since the clock's epoch) the slot holds
    std::atomic<uint32_t> errors{0};
    std::atomic<int64_t> max_us{0};
    std::atomic<uint64_t> sum_us{0};
    std::array<std::atomic<uint32_t>, CoarseBuckets::kCount> buckets{};
  };
  static int64_t SecondOf(Clock::time_point t) noexcept {
    return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
  }
  bool Claim(Slot& slot, int64_t second) noexcept;  // false: the slot already holds a newer second
  uint64_t SlotCount(const Slot& slot) const noexcept;

  const Clock::time_point created_;
  std::mutex claim_mutex_;
  std::array<Slot, kSlots> slots_;
};

template <size_t N>
std::array<uint64_t, N> WindowedLatency::CountsPerSecond(Clock::time_point now) const noexcept {
  static_assert(N <= kMaxWindowSeconds);
  std::array<uint64_t, N> counts{};
  const int64_t current = SecondOf(now);
  for (size_t i = 0; i < N; ++i) {
    const int64_t second = current - static_cast<int64_t>(N - i);
    const Slot& slot = slots_[static_cast<size_t>(second) & (kSlots - 1)];
    if (slot.second.load(std::memory_order_acquire) == second) counts[i] = SlotCount(slot);
  }
  return counts;
}

}  // namespace arenarpc::stats
