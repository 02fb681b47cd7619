#pragma once
// The built-in memory strategies as a closed set. Options take the enum or its name
// (`options.memory_mode = "reuse";`, as flags and URLs spell it); the library works with the enum.

#include <string_view>
#include <utility>

#include "arenarpc/named_enum.h"

namespace arenarpc::memory {

enum class MemoryMode { kHeap, kArena, kPaged, kReuse, kAuto };

}  // namespace arenarpc::memory

namespace arenarpc {

template <>
struct EnumNames<memory::MemoryMode> {
  static constexpr std::pair<std::string_view, memory::MemoryMode> kNames[] = {
      {"heap", memory::MemoryMode::kHeap},   {"arena", memory::MemoryMode::kArena},
      {"paged", memory::MemoryMode::kPaged}, {"paged_arena", memory::MemoryMode::kPaged},
      {"reuse", memory::MemoryMode::kReuse}, {"auto", memory::MemoryMode::kAuto}};
};

}  // namespace arenarpc
