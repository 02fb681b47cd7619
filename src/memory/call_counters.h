#pragma once
// acquired/released counters shared by the strategies, on their own cache line.
#include <atomic>
#include <cstdint>

#include "arenarpc/memory/message_memory.h"

namespace arenarpc::memory {

struct alignas(64) CallCounters {
  std::atomic<uint64_t> acquired{0};
  std::atomic<uint64_t> released{0};

  void OnAcquire() noexcept { acquired.fetch_add(1, std::memory_order_relaxed); }
  void OnRelease() noexcept { released.fetch_add(1, std::memory_order_relaxed); }
  void FillStats(MemoryStats& s) const noexcept {
    s.acquired = acquired.load(std::memory_order_relaxed);
    s.released = released.load(std::memory_order_relaxed);
  }
};

}  // namespace arenarpc::memory
