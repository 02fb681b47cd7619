#include "arenarpc/grpc/service_memory.h"

namespace arenarpc::grpc {

ServiceMemory::ServiceMemory(std::string_view mode, const memory::MemoryOptions& options)
    : mode_(mode) {
  if (IsDefaultMode(mode)) {
    memory::ValidateMemoryOptions(options);  // the same flags are accepted in every mode
  } else {
    strategy_ = MakeStrategy(mode, options);
  }
}

ServiceMemory::ServiceMemory(std::shared_ptr<memory::MessageMemory> strategy)
    : mode_(strategy ? std::string(strategy->name()) : std::string("default")),
      strategy_(std::move(strategy)) {}

memory::MemoryStats ServiceMemory::memory_stats() const noexcept {
  return strategy_ ? strategy_->stats() : memory::MemoryStats{};
}

HolderStats ServiceMemory::holder_stats() const {
  HolderStats total;
  std::lock_guard lock(mu_);
  for (const auto& allocator : allocators_) {
    HolderStats one = allocator->holder_stats();
    total.allocated += one.allocated;
    total.released += one.released;
    total.released_at_serialize += one.released_at_serialize;
  }
  return total;
}

}  // namespace arenarpc::grpc
