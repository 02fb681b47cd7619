#pragma once
// The ARENARPC_MEMORY_MODE environment variable: one memory strategy for every method of every
// Server of the process, without a code change (docs/memory.md, "One strategy for every method"),
// so that a tool such as bench/memlab can run any arenarpc server binary once per strategy:
//   ARENARPC_MEMORY_MODE=reuse ./my_server

#include <string>
#include <string_view>

#include "arenarpc/server.h"

namespace arenarpc::server {

inline constexpr const char* kMemoryModeEnvironmentVariable = "ARENARPC_MEMORY_MODE";

// Replaces every memory choice of *options by `mode`: memory_mode = mode, and memory_strategy,
// method_memory_mode and method_memory_strategy are cleared (MemoryOptions stay: they size the
// strategy, they do not choose it). "" on success, else why `mode` is not a strategy name.
std::string OverrideMemoryMode(std::string_view mode, ServerOptions* options);

}  // namespace arenarpc::server
