// Process-wide arena defaults and validation of MemoryOptions.
#include <mutex>
#include <stdexcept>
#include <string>

#include "arenarpc/memory/message_memory.h"
#include "arenarpc/memory/page_allocator.h"
#include "memory/deprecated_memory_options.h"

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

void ValidateAutoSettings(const AutoSettings& given) {
  AutoSettings s = given;
  ApplyDeprecatedSpellings(&s);
  if (s.candidates.empty()) throw std::invalid_argument("auto candidates must not be empty");
  for (size_t i = 0; i < s.candidates.size(); ++i) {
    const NamedEnum<MemoryMode>& candidate = s.candidates[i];
    if (!candidate.valid() || candidate == MemoryMode::kAuto) {
      throw std::invalid_argument("auto candidate '" + std::string(candidate.name()) +
                                  "' is not a strategy (valid: heap, arena, paged, reuse)");
    }
    for (size_t j = 0; j < i; ++j) {
      if (s.candidates[j] == candidate.value()) {
        throw std::invalid_argument("auto candidate '" + std::string(candidate.name()) +
                                    "' is listed twice");
      }
    }
  }
  if (s.trial_calls == 0) throw std::invalid_argument("auto trial_calls must be >= 1");
  if (s.trial_block == 0) throw std::invalid_argument("auto trial_block must be >= 1");
  if (s.sample_every == 0) throw std::invalid_argument("auto sample_every must be >= 1");
  if (s.recheck_calls == 0) throw std::invalid_argument("auto recheck_calls must be >= 1");
  if (s.recheck_interval.count() < 1) {
    throw std::invalid_argument("auto recheck_interval=" +
                                std::to_string(s.recheck_interval.count()) + "ms must be >= 1 ms");
  }
  if (!(s.shape_change > 1)) throw std::invalid_argument("auto shape_change must be > 1");
  if (!(s.rate_change == 0 || s.rate_change > 1)) {
    throw std::invalid_argument("auto rate_change must be > 1 (or 0: off)");
  }
  if (!(s.switch_margin >= 0 && s.switch_margin < 1)) {
    throw std::invalid_argument("auto switch_margin must be in [0, 1)");
  }
  if (!(s.max_held_ratio == 0 || s.max_held_ratio >= 1)) {
    throw std::invalid_argument("auto max_held_ratio must be 0 (off) or >= 1");
  }
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
  ValidateAutoSettings(options.automatic);
  ValidatePagePoolOptions(
      PagePoolOptions{options.page_size, options.page_cache_capacity, options.thread_cache_pages});
}

}  // namespace arenarpc::memory
