#include <stdexcept>
#include <string>

#include "arenarpc/memory/message_memory.h"
#include "memory/option_errors.h"
#include "memory/strategies.h"

namespace arenarpc::memory {
namespace {

// The strategy of a valid mode over validated options.
std::shared_ptr<MessageMemory> Make(MemoryMode mode, const MemoryOptions& options) {
  switch (mode) {
    case MemoryMode::kHeap: return MakeHeapMemory(options);
    case MemoryMode::kArena: return MakeArenaMemory(options);
    case MemoryMode::kPaged: return MakePagedMemory(options);
    case MemoryMode::kReuse: return MakeReuseMemory(options);
    case MemoryMode::kAuto: return MakeAutoMemory(options);
  }
  return nullptr;
}

std::string ModeError(MemoryMode mode) {
  for (const auto& [name, value] : EnumNames<MemoryMode>::kNames) {
    if (value == mode) return {};
  }
  return "unknown message memory strategy " + std::to_string(static_cast<int>(mode));
}

std::string NameError(const NamedEnum<MemoryMode>& mode) {
  if (mode.valid()) return {};
  return "unknown message memory strategy '" + std::string(mode.name()) +
         "' (valid: " + NamedEnum<MemoryMode>::Choices() + ")";
}

}  // namespace

std::shared_ptr<MessageMemory> MakeMessageMemory(MemoryMode mode, const MemoryOptions& options,
                                                 std::string* error) {
  if (ReportError(ModeError(mode), error) != 0) return nullptr;
  if (ValidateMemoryOptions(options, error) != 0) return nullptr;
  return Make(mode, options);
}

std::shared_ptr<MessageMemory> MakeMessageMemory(std::string_view name,
                                                 const MemoryOptions& options, std::string* error) {
  const NamedEnum<MemoryMode> mode(name);
  if (ReportError(NameError(mode), error) != 0) return nullptr;
  return MakeMessageMemory(mode.value(), options, error);
}

std::shared_ptr<MessageMemory> MakeMessageMemory(MemoryMode mode) {
  return MakeMessageMemory(mode, MemoryOptions{}, nullptr);  // nullptr: a value outside MemoryMode
}

// The deprecated throwing spellings.
std::shared_ptr<MessageMemory> MakeMessageMemory(MemoryMode mode, const MemoryOptions& options) {
  std::string error;
  std::shared_ptr<MessageMemory> memory = MakeMessageMemory(mode, options, &error);
  ThrowIfInvalid(error);
  return memory;
}

std::shared_ptr<MessageMemory> MakeMessageMemory(std::string_view name,
                                                 const MemoryOptions& options) {
  std::string error;
  std::shared_ptr<MessageMemory> memory = MakeMessageMemory(name, options, &error);
  ThrowIfInvalid(error);
  return memory;
}

}  // namespace arenarpc::memory
