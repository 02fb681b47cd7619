#include <stdexcept>
#include <string>

#include "arenarpc/memory/message_memory.h"
#include "memory/strategies.h"

namespace arenarpc::memory {

std::shared_ptr<MessageMemory> MakeMessageMemory(std::string_view name,
                                                 const MemoryOptions& options) {
  ValidateMemoryOptions(options);
  if (name == "heap") return MakeHeapMemory(options);
  if (name == "arena") return MakeArenaMemory(options);
  if (name == "paged" || name == "paged_arena") return MakePagedMemory(options);
  if (name == "reuse") return MakeReuseMemory(options);
  if (name == "auto") return MakeAutoMemory(options);
  throw std::invalid_argument("unknown message memory strategy '" + std::string(name) +
                              "' (valid: heap, arena, paged, reuse, auto)");
}

}  // namespace arenarpc::memory
