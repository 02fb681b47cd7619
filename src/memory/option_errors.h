#pragma once
// The memory options' validation as text ("" = valid): what the public Validate* / Make*
// functions return in *error, and what the constructors that validate (CachedPageAllocator, the
// reuse pools) throw.

#include <cstddef>
#include <string>

#include "arenarpc/memory/message_memory.h"
#include "arenarpc/memory/page_allocator.h"

namespace arenarpc::memory {

std::string PageSizeError(size_t page_size);  // a power of two in [256 B, 1 MiB]
std::string PagePoolOptionsError(const PagePoolOptions& options);
std::string ArenaSettingsError(const ArenaSettings& settings);
std::string ReuseSettingsError(const ReuseSettings& settings);
std::string AutoSettingsError(const AutoSettings& settings);
std::string MemoryOptionsError(const MemoryOptions& options);

// The set-up shape: 0 for "", else -1 with the text in *error (when error is not nullptr).
int ReportError(std::string text, std::string* error);
// For constructors, which have no return value: throws std::invalid_argument unless "".
void ThrowIfInvalid(const std::string& text);

}  // namespace arenarpc::memory
