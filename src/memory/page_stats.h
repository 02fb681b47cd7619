#pragma once
// A page pool's counters as MemoryStats (the paged strategy's, and reuse's response arenas').
#include "arenarpc/memory/message_memory.h"
#include "arenarpc/memory/page_allocator.h"

namespace arenarpc::memory {

inline void FillPageStats(const PageAllocatorStats& p, MemoryStats& s) noexcept {
  s.page_allocations = p.allocations;
  s.page_cache_hits = p.cache_hits;
  s.page_cache_misses = p.cache_misses;
  s.pages_cached = p.pages_cached;
  s.pages_outstanding = p.pages_outstanding;
}

}  // namespace arenarpc::memory
