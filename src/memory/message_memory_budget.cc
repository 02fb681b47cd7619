#include "memory/message_memory_budget.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace arenarpc::memory {

namespace {
void RaiseTo(std::atomic<uint64_t>& mark, uint64_t value) noexcept {
  uint64_t seen = mark.load(std::memory_order_relaxed);
  while (value > seen && !mark.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}
}  // namespace

bool MessageMemoryBudget::TryCharge(uint64_t bytes, Charge* charge) noexcept {
  const uint64_t limit = limit_.load(std::memory_order_relaxed);
  const uint64_t now = in_use_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (limit != 0 && now > limit && now != bytes) {
    in_use_.fetch_sub(bytes, std::memory_order_relaxed);
    return false;
  }
  if (now > high_water_.load(std::memory_order_relaxed)) {
    RaiseTo(high_water_, now);
    RaiseTo(peak_, now);
  }
  charge->Return();
  charge->budget_ = this;
  charge->bytes_ = bytes;
  return true;
}

void MessageMemoryBudget::Return(uint64_t bytes) noexcept {
  const uint64_t now = in_use_.fetch_sub(bytes, std::memory_order_relaxed) - bytes;
  uint64_t high = high_water_.load(std::memory_order_relaxed);
  if (high >= kTrimAfter && now <= high / 4) {
    // One thread wins the mark and trims; calls still in flight then trim again at zero.
    if (!high_water_.compare_exchange_strong(high, now, std::memory_order_relaxed)) return;
    if (now > 0) again_at_zero_.store(true, std::memory_order_relaxed);
  } else if (now != 0 || !again_at_zero_.exchange(false, std::memory_order_relaxed)) {
    return;
  }
  trims_.fetch_add(1, std::memory_order_relaxed);
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace arenarpc::memory
