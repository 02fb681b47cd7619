#include "arenarpc/grpc_memory/message_allocator.h"

#include <stdexcept>
#include <string>

namespace arenarpc::grpc_memory {

MethodAllocatorCore::MethodAllocatorCore(std::shared_ptr<memory::MessageMemory> memory,
                                         const google::protobuf::Message& request_prototype,
                                         const google::protobuf::Message& response_prototype)
    : memory_(std::move(memory)) {
  if (memory_ == nullptr) {
    throw std::invalid_argument("arenarpc::grpc_memory: a message allocator needs a strategy (got null)");
  }
  method_ = memory_->Bind(request_prototype, response_prototype);
}

memory::MessagePair MethodAllocatorCore::Acquire() {
  memory::MessagePair pair = method_->Acquire();
  allocated_.fetch_add(1, std::memory_order_release);
  return pair;
}

HolderStats MethodAllocatorCore::holder_stats() const noexcept {
  HolderStats stats;
  // Read released first so that a concurrent call never shows released > allocated.
  stats.released = released_.load(std::memory_order_acquire);
  stats.allocated = allocated_.load(std::memory_order_acquire);
  stats.released_at_serialize = released_at_serialize_.load(std::memory_order_relaxed);
  return stats;
}

std::shared_ptr<memory::MessageMemory> MakeStrategy(std::string_view mode,
                                                    const memory::MemoryOptions& options,
                                                    std::string* error) {
  if (IsDefaultMode(mode)) {
    if (error != nullptr) {
      *error = "arenarpc::grpc_memory: mode 'default' is gRPC's own allocation and has no strategy";
    }
    return nullptr;
  }
  return memory::MakeMessageMemory(mode, options, error);
}

std::shared_ptr<memory::MessageMemory> MakeStrategy(std::string_view mode,
                                                    const memory::MemoryOptions& options) {
  std::string error;
  std::shared_ptr<memory::MessageMemory> strategy = MakeStrategy(mode, options, &error);
  if (strategy == nullptr) throw std::invalid_argument(error);
  return strategy;
}

}  // namespace arenarpc::grpc_memory
