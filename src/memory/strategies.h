#pragma once
// The MessageMemory strategies (internal; create them with MakeMessageMemory).
#include <memory>
#include <vector>

#include "arenarpc/memory/message_memory.h"

namespace arenarpc::memory {

std::shared_ptr<MessageMemory> MakeHeapMemory(const MemoryOptions& options);
std::shared_ptr<MessageMemory> MakeArenaMemory(const MemoryOptions& options);
std::shared_ptr<MessageMemory> MakePagedMemory(const MemoryOptions& options);
std::shared_ptr<MessageMemory> MakeReuseMemory(const MemoryOptions& options);
// "auto" over options.automatic.candidates, or over the given strategies (tests).
std::shared_ptr<MessageMemory> MakeAutoMemory(const MemoryOptions& options);
std::shared_ptr<MessageMemory> MakeAutoMemory(
    std::vector<std::shared_ptr<MessageMemory>> candidates, const AutoSettings& settings);

}  // namespace arenarpc::memory
