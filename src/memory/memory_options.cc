// Process-wide arena defaults and validation of MemoryOptions.
#include <mutex>
#include <stdexcept>
#include <string>

#include "arenarpc/memory/message_memory.h"
#include "arenarpc/memory/page_allocator.h"

namespace arenarpc::memory {
namespace {

std::mutex g_defaults_mu;
ArenaSettings g_defaults;  // brpc's 256 / 8192

}  // namespace

void ValidateArenaSettings(const ArenaSettings& s) {
  if (s.start_block_size == 0) throw std::invalid_argument("arena start_block_size must be > 0");
  if (s.max_block_size < s.start_block_size) {
    throw std::invalid_argument("arena max_block_size (" + std::to_string(s.max_block_size) +
                                ") must be >= start_block_size (" +
                                std::to_string(s.start_block_size) + ")");
  }
}

void ValidateReuseSettings(const ReuseSettings& s) {
  if (s.max_pooled_objects == 0) {
    throw std::invalid_argument("reuse max_pooled_objects must be >= 1 (use the heap strategy)");
  }
  if (s.max_object_bytes == 0) throw std::invalid_argument("reuse max_object_bytes must be > 0");
  if (s.max_pool_bytes == 0) throw std::invalid_argument("reuse max_pool_bytes must be > 0");
  if (s.sample_every == 0) throw std::invalid_argument("reuse sample_every must be >= 1");
}

ArenaSettings DefaultArenaSettings() {
  std::lock_guard lock(g_defaults_mu);
  return g_defaults;
}

void SetDefaultArenaSettings(const ArenaSettings& settings) {
  ValidateArenaSettings(settings);
  std::lock_guard lock(g_defaults_mu);
  g_defaults = settings;
}

void ValidateMemoryOptions(const MemoryOptions& options) {
  ValidateArenaSettings(options.arena);
  ValidateReuseSettings(options.reuse);
  ValidatePagePoolOptions(
      PagePoolOptions{options.page_size, options.page_cache_capacity, options.thread_cache_pages});
}

}  // namespace arenarpc::memory
