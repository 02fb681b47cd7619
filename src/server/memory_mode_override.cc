#include "server/memory_mode_override.h"

namespace arenarpc::server {

std::string OverrideMemoryMode(std::string_view mode, ServerOptions* options) {
  const NamedEnum<memory::MemoryMode> named(mode);
  if (!named.valid()) {  // checked here so that the error names the variable
    return std::string(kMemoryModeEnvironmentVariable) + "='" + std::string(mode) +
           "' is invalid (expected " + NamedEnum<memory::MemoryMode>::Choices() + ")";
  }
  options->memory_mode = named;
  options->memory_strategy.reset();
  options->method_memory_mode.clear();
  options->method_memory_strategy.clear();
  return "";
}

}  // namespace arenarpc::server
