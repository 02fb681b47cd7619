#pragma once
// The reuse strategy with every call served by its pools. The engine's tests use small messages,
// which the default (ReuseSettings::min_call_bytes) would make on the paged arena instead.
#include "arenarpc/memory/message_memory.h"

namespace arenarpc::memory {

inline MemoryOptions PooledReuseOptions() {
  MemoryOptions options;
  options.reuse.min_call_bytes = 0;
  return options;
}

}  // namespace arenarpc::memory
