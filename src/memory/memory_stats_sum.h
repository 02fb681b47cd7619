#pragma once
// Adds one MemoryStats into another, field by field (auto's candidates, a method's candidates).
#include "arenarpc/memory/message_memory.h"

namespace arenarpc::memory {

inline void AddStats(MemoryStats& total, const MemoryStats& s) noexcept {
  total.acquired += s.acquired;
  total.released += s.released;
  total.page_allocations += s.page_allocations;
  total.page_cache_hits += s.page_cache_hits;
  total.page_cache_misses += s.page_cache_misses;
  total.pages_cached += s.pages_cached;
  total.pages_outstanding += s.pages_outstanding;
  total.reuses += s.reuses;
  total.rebuilds += s.rebuilds;
  total.trims += s.trims;
  total.objects_pooled += s.objects_pooled;
  total.retained_bytes_estimate += s.retained_bytes_estimate;
  total.requests_shaped += s.requests_shaped;
  total.responses_mirrored += s.responses_mirrored;
  total.calls_on_arena += s.calls_on_arena;
}

}  // namespace arenarpc::memory
