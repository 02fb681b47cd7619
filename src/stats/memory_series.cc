#include "stats/memory_series.h"

namespace arenarpc::stats {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

}  // namespace

int64_t MemorySeries::PeriodOf(Clock::time_point now) const noexcept {
  return std::chrono::duration_cast<std::chrono::seconds>(now - created_).count() / kPointSeconds;
}

MemorySeries::Slot& MemorySeries::SlotFor(int64_t period) noexcept {
  Slot& slot = slots_[static_cast<size_t>(period) % slots_.size()];
  if (slot.period.load(std::memory_order_acquire) != period) {
    std::lock_guard lock(reset_mu_);
    if (slot.period.load(kRelaxed) != period) {
      slot.held_samples.store(0, kRelaxed);
      slot.held_bytes_sum.store(0, kRelaxed);
      slot.cpu_samples.store(0, kRelaxed);
      slot.cpu_ns_sum.store(0, kRelaxed);
      slot.period.store(period, std::memory_order_release);
    }
  }
  return slot;
}

void MemorySeries::RecordHeld(uint64_t bytes, Clock::time_point now) noexcept {
  Slot& slot = SlotFor(PeriodOf(now));
  slot.held_samples.fetch_add(1, kRelaxed);
  slot.held_bytes_sum.fetch_add(bytes, kRelaxed);
}

void MemorySeries::RecordCpu(uint64_t ns, Clock::time_point now) noexcept {
  Slot& slot = SlotFor(PeriodOf(now));
  slot.cpu_samples.fetch_add(1, kRelaxed);
  slot.cpu_ns_sum.fetch_add(ns, kRelaxed);
}

std::array<MemoryPoint, MemorySeries::kPoints> MemorySeries::Points(Clock::time_point now) const {
  std::array<MemoryPoint, kPoints> points{};
  const int64_t newest = PeriodOf(now);
  for (int i = 0; i < kPoints; ++i) {
    const int64_t period = newest - (kPoints - 1 - i);
    if (period < 0) continue;
    const Slot& slot = slots_[static_cast<size_t>(period) % slots_.size()];
    if (slot.period.load(std::memory_order_acquire) != period) continue;
    MemoryPoint& p = points[static_cast<size_t>(i)];
    p.held_samples = slot.held_samples.load(kRelaxed);
    p.held_bytes_sum = slot.held_bytes_sum.load(kRelaxed);
    p.cpu_samples = slot.cpu_samples.load(kRelaxed);
    p.cpu_ns_sum = slot.cpu_ns_sum.load(kRelaxed);
  }
  return points;
}

}  // namespace arenarpc::stats
