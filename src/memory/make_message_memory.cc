#include <stdexcept>
#include <string>

#include "arenarpc/memory/message_memory.h"
#include "memory/strategies.h"

namespace arenarpc::memory {

std::shared_ptr<MessageMemory> MakeMessageMemory(MemoryMode mode, const MemoryOptions& options) {
  ValidateMemoryOptions(options);
  switch (mode) {
    case MemoryMode::kHeap: return MakeHeapMemory(options);
    case MemoryMode::kArena: return MakeArenaMemory(options);
    case MemoryMode::kPaged: return MakePagedMemory(options);
    case MemoryMode::kReuse: return MakeReuseMemory(options);
    case MemoryMode::kAuto: return MakeAutoMemory(options);
  }
  throw std::invalid_argument("unknown message memory strategy " +
                              std::to_string(static_cast<int>(mode)));
}

std::shared_ptr<MessageMemory> MakeMessageMemory(std::string_view name,
                                                 const MemoryOptions& options) {
  const NamedEnum<MemoryMode> mode(name);
  if (!mode.valid()) {
    throw std::invalid_argument("unknown message memory strategy '" + std::string(name) +
                                "' (valid: " + NamedEnum<MemoryMode>::Choices() + ")");
  }
  return MakeMessageMemory(mode.value(), options);
}

}  // namespace arenarpc::memory
