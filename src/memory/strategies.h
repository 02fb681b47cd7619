#pragma once
// The four MessageMemory strategies (internal; create them with MakeMessageMemory).
#include <memory>

#include "arenarpc/memory/message_memory.h"

namespace arenarpc::memory {

std::shared_ptr<MessageMemory> MakeHeapMemory(const MemoryOptions& options);
std::shared_ptr<MessageMemory> MakeArenaMemory(const MemoryOptions& options);
std::shared_ptr<MessageMemory> MakePagedMemory(const MemoryOptions& options);
std::shared_ptr<MessageMemory> MakeReuseMemory(const MemoryOptions& options);

}  // namespace arenarpc::memory
