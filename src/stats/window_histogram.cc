#include "stats/window_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace arenarpc::stats {
namespace {

constexpr int kS = CoarseBuckets::kSubBucketBits;
constexpr uint64_t kLinear = uint64_t{1} << kS;     // exact buckets below this value
constexpr uint64_t kHalf = uint64_t{1} << (kS - 1);  // buckets per power of two above

int64_t Clamp(int64_t us) noexcept {
  return us < 0 ? 0 : std::min(us, CoarseBuckets::kMaxTrackableUs);
}

}  // namespace

size_t CoarseBuckets::Index(int64_t us) noexcept {
  const auto v = static_cast<uint64_t>(Clamp(us));
  if (v < kLinear) return v;
  const int e = std::bit_width(v) - 1;  // 2^e <= v < 2^(e+1), e >= kS
  const int shift = e - kS + 1;
  return kLinear + size_t(e - kS) * kHalf + ((v >> shift) - kHalf);
}

int64_t CoarseBuckets::Lowest(size_t index) noexcept {
  if (index < kLinear) return static_cast<int64_t>(index);
  const size_t octave = (index - kLinear) / kHalf;
  const uint64_t sub = (index - kLinear) % kHalf + kHalf;
  return static_cast<int64_t>(sub << (octave + 1));
}

int64_t CoarseBuckets::Width(size_t index) noexcept {
  if (index < kLinear) return 1;
  return int64_t{1} << ((index - kLinear) / kHalf + 1);
}

int64_t WindowSnapshot::Percentile(double percentile) const noexcept {
  if (count == 0) return 0;
  if (!(percentile > 0)) percentile = 0;
  percentile = std::min(percentile, 100.0);
  uint64_t total = 0;
  for (uint64_t n : buckets) total += n;
  if (total == 0) return 0;
  auto rank = static_cast<uint64_t>(std::ceil(percentile / 100.0 * static_cast<double>(total)));
  rank = std::clamp<uint64_t>(rank, 1, total);
  if (rank == total) return max_us;
  uint64_t seen = 0;
  size_t index = 0;
  for (; index + 1 < buckets.size(); ++index) {
    seen += buckets[index];
    if (seen >= rank) break;
  }
  const int64_t mid = CoarseBuckets::Lowest(index) + CoarseBuckets::Width(index) / 2;
  return std::min(mid, max_us);
}

bool WindowedLatency::Claim(Slot& slot, int64_t second) noexcept {
  std::lock_guard lock(claim_mutex_);
  const int64_t held = slot.second.load(std::memory_order_relaxed);
  if (held == second) return true;  // another writer claimed it meanwhile
  if (held > second) return false;  // a writer stalled for a whole ring: drop its value
  for (auto& bucket : slot.buckets) bucket.store(0, std::memory_order_relaxed);
  slot.errors.store(0, std::memory_order_relaxed);
  slot.max_us.store(0, std::memory_order_relaxed);
  slot.sum_us.store(0, std::memory_order_relaxed);
  slot.second.store(second, std::memory_order_release);
  return true;
}

void WindowedLatency::Record(Clock::time_point now, int64_t latency_us, bool failed) noexcept {
  const int64_t second = SecondOf(now);
  Slot& slot = slots_[static_cast<size_t>(second) & (kSlots - 1)];
  if (slot.second.load(std::memory_order_acquire) != second && !Claim(slot, second)) return;
  const int64_t v = Clamp(latency_us);
  slot.buckets[CoarseBuckets::Index(v)].fetch_add(1, std::memory_order_relaxed);
  slot.sum_us.fetch_add(static_cast<uint64_t>(v), std::memory_order_relaxed);
  if (failed) slot.errors.fetch_add(1, std::memory_order_relaxed);
  int64_t seen = slot.max_us.load(std::memory_order_relaxed);
  while (v > seen && !slot.max_us.compare_exchange_weak(seen, v, std::memory_order_relaxed)) {
  }
}

uint64_t WindowedLatency::SlotCount(const Slot& slot) const noexcept {
  uint64_t n = 0;
  for (const auto& bucket : slot.buckets) n += bucket.load(std::memory_order_relaxed);
  return n;
}

WindowSnapshot WindowedLatency::Snapshot(Clock::time_point now, int seconds) const noexcept {
  seconds = std::clamp(seconds, 1, kMaxWindowSeconds);
  WindowSnapshot out;
  const int64_t current = SecondOf(now);
  for (int64_t second = current - seconds + 1; second <= current; ++second) {
    const Slot& slot = slots_[static_cast<size_t>(second) & (kSlots - 1)];
    if (slot.second.load(std::memory_order_acquire) != second) continue;
    for (size_t i = 0; i < CoarseBuckets::kCount; ++i) {
      const uint64_t n = slot.buckets[i].load(std::memory_order_relaxed);
      out.buckets[i] += n;
      out.count += n;
    }
    out.errors += slot.errors.load(std::memory_order_relaxed);
    out.sum_us += slot.sum_us.load(std::memory_order_relaxed);
    out.max_us = std::max(out.max_us, slot.max_us.load(std::memory_order_relaxed));
  }
  // The window spans the whole seconds before the current one and the part of it elapsed, but
  // nothing before this recorder existed.
  using std::chrono::duration;
  const double into_current =
      duration<double>(now.time_since_epoch()).count() - static_cast<double>(current);
  const double alive = duration<double>(now - created_).count();
  // At least a second, so that the first calls after the start do not read as a huge rate.
  out.seconds = std::max(1.0, std::min(static_cast<double>(seconds - 1) + into_current, alive));
  return out;
}

}  // namespace arenarpc::stats
