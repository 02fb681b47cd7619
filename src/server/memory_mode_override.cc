#include "server/memory_mode_override.h"

#include <algorithm>
#include <array>

namespace arenarpc::server {

std::string OverrideMemoryMode(std::string_view mode, ServerOptions* options) {
  // The names MakeMessageMemory() accepts; checked here so that the error names the variable.
  constexpr std::array<std::string_view, 6> kModes = {"heap",  "arena", "paged",
                                                      "paged_arena", "reuse", "auto"};
  if (std::ranges::find(kModes, mode) == kModes.end()) {
    return std::string(kMemoryModeEnvironmentVariable) + "='" + std::string(mode) +
           "' is invalid (expected heap, arena, paged, reuse or auto)";
  }
  options->memory_mode = std::string(mode);
  options->memory_strategy.reset();
  options->method_memory_mode.clear();
  options->method_memory_strategy.clear();
  return "";
}

}  // namespace arenarpc::server
