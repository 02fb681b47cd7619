// Process-wide arena defaults and validation of MemoryOptions.
#include <mutex>
#include <string>

#include "arenarpc/memory/message_memory.h"
#include "arenarpc/memory/page_allocator.h"
#include "memory/deprecated_memory_options.h"
#include "memory/option_errors.h"

namespace arenarpc::memory {
namespace {

std::mutex g_defaults_mu;
ArenaSettings g_defaults;  // brpc's 256 / 8192

}  // namespace

std::string ArenaSettingsError(const ArenaSettings& s) {
  if (s.start_block_size == 0) return "arena start_block_size must be > 0";
  if (s.max_block_size < s.start_block_size) {
    return "arena max_block_size (" + std::to_string(s.max_block_size) +
           ") must be >= start_block_size (" + std::to_string(s.start_block_size) + ")";
  }
  return {};
}

std::string ReuseSettingsError(const ReuseSettings& s) {
  if (s.max_pooled_objects == 0) {
    return "reuse max_pooled_objects must be >= 1 (use the heap strategy)";
  }
  if (s.max_object_bytes == 0) return "reuse max_object_bytes must be > 0";
  if (s.max_pool_bytes == 0) return "reuse max_pool_bytes must be > 0";
  if (s.sample_every == 0) return "reuse sample_every must be >= 1";
  return {};
}

std::string AutoSettingsError(const AutoSettings& given) {
  AutoSettings s = given;
  ApplyDeprecatedSpellings(&s);
  if (s.candidates.empty()) return "auto candidates must not be empty";
  for (size_t i = 0; i < s.candidates.size(); ++i) {
    const NamedEnum<MemoryMode>& candidate = s.candidates[i];
    if (!candidate.valid() || candidate == MemoryMode::kAuto) {
      return "auto candidate '" + std::string(candidate.name()) +
             "' is not a strategy (valid: heap, arena, paged, reuse)";
    }
    for (size_t j = 0; j < i; ++j) {
      if (s.candidates[j] == candidate.value()) {
        return "auto candidate '" + std::string(candidate.name()) + "' is listed twice";
      }
    }
  }
  if (s.trial_calls == 0) return "auto trial_calls must be >= 1";
  if (s.trial_block == 0) return "auto trial_block must be >= 1";
  if (s.sample_every == 0) return "auto sample_every must be >= 1";
  if (s.recheck_calls == 0) return "auto recheck_calls must be >= 1";
  if (s.recheck_interval.count() < 1) {
    return "auto recheck_interval=" + std::to_string(s.recheck_interval.count()) +
           "ms must be >= 1 ms";
  }
  if (!(s.shape_change > 1)) return "auto shape_change must be > 1";
  if (!(s.rate_change == 0 || s.rate_change > 1)) return "auto rate_change must be > 1 (or 0: off)";
  if (!(s.switch_margin >= 0 && s.switch_margin < 1)) return "auto switch_margin must be in [0, 1)";
  if (!(s.max_held_ratio == 0 || s.max_held_ratio >= 1)) {
    return "auto max_held_ratio must be 0 (off) or >= 1";
  }
  return {};
}

std::string MemoryOptionsError(const MemoryOptions& options) {
  for (std::string error :
       {ArenaSettingsError(options.arena), ReuseSettingsError(options.reuse),
        AutoSettingsError(options.automatic),
        PagePoolOptionsError(PagePoolOptions{options.page_size, options.page_cache_capacity,
                                             options.thread_cache_pages})}) {
    if (!error.empty()) return error;
  }
  return {};
}

int ValidateArenaSettings(const ArenaSettings& s, std::string* error) {
  return ReportError(ArenaSettingsError(s), error);
}
int ValidateReuseSettings(const ReuseSettings& s, std::string* error) {
  return ReportError(ReuseSettingsError(s), error);
}
int ValidateAutoSettings(const AutoSettings& s, std::string* error) {
  return ReportError(AutoSettingsError(s), error);
}
int ValidateMemoryOptions(const MemoryOptions& options, std::string* error) {
  return ReportError(MemoryOptionsError(options), error);
}

ArenaSettings DefaultArenaSettings() {
  std::lock_guard lock(g_defaults_mu);
  return g_defaults;
}

int SetDefaultArenaSettings(const ArenaSettings& settings, std::string* error) {
  if (ValidateArenaSettings(settings, error) != 0) return -1;
  std::lock_guard lock(g_defaults_mu);
  g_defaults = settings;
  return 0;
}

// The deprecated throwing spellings.
void ValidateArenaSettings(const ArenaSettings& s) { ThrowIfInvalid(ArenaSettingsError(s)); }
void ValidateReuseSettings(const ReuseSettings& s) { ThrowIfInvalid(ReuseSettingsError(s)); }
void ValidateAutoSettings(const AutoSettings& s) { ThrowIfInvalid(AutoSettingsError(s)); }
void ValidateMemoryOptions(const MemoryOptions& options) {
  ThrowIfInvalid(MemoryOptionsError(options));
}
void SetDefaultArenaSettings(const ArenaSettings& settings) {
  ThrowIfInvalid(ArenaSettingsError(settings));
  SetDefaultArenaSettings(settings, nullptr);
}

}  // namespace arenarpc::memory
