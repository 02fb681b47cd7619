#include "arenarpc/grpc_memory/service_memory.h"

#include <google/protobuf/descriptor.h>

namespace arenarpc::grpc_memory {
namespace {

constexpr std::string_view kWhere = "arenarpc::grpc_memory::ServiceMemory::Serve: ";

std::string Quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

}  // namespace

namespace detail {

const google::protobuf::MethodDescriptor& FindRpc(std::string_view full_name,
                                                  const google::protobuf::Descriptor& request,
                                                  const google::protobuf::Descriptor& response) {
  // Through the service: the generated pool loads files by service name, not by method name.
  const google::protobuf::MethodDescriptor* rpc = nullptr;
  if (const size_t dot = full_name.rfind('.'); dot != std::string_view::npos) {
    if (const google::protobuf::ServiceDescriptor* service =
            google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
                std::string(full_name.substr(0, dot)))) {
      rpc = service->FindMethodByName(std::string(full_name.substr(dot + 1)));
    }
  }
  if (rpc == nullptr) {
    throw std::invalid_argument(std::string(kWhere) + "no rpc " + Quoted(full_name) +
                                " in the linked .proto files (name it as package.Service.Method; the "
                                "generated .pb.cc of the file declaring the service must be "
                                "linked in)");
  }
  if (rpc->input_type() != &request || rpc->output_type() != &response) {
    throw std::invalid_argument(std::string(kWhere) + "rpc " + Quoted(full_name) + " takes " +
                                rpc->input_type()->full_name() + " and returns " +
                                rpc->output_type()->full_name() + ", but the handler takes " +
                                request.full_name() + " and returns " + response.full_name());
  }
  if (rpc->client_streaming() || rpc->server_streaming()) {
    throw std::invalid_argument(std::string(kWhere) + "rpc " + Quoted(full_name) +
                                " streams; only unary methods can be served");
  }
  return *rpc;
}

void ThrowNotCallbackUnary(const google::protobuf::MethodDescriptor& rpc) {
  throw std::invalid_argument(std::string(kWhere) + "the service does not handle rpc " +
                              Quoted(rpc.full_name()) +
                              " as a callback unary method (pass the generated CallbackService "
                              "of " + rpc.service()->full_name() + ")");
}

}  // namespace detail

ServiceMemory::ServiceMemory(std::string_view mode, const memory::MemoryOptions& options)
    : mode_(mode), options_(options) {
  memory::ValidateMemoryOptions(options);  // the same flags are accepted in every mode
  strategy_ = StrategyFor(mode);
}

ServiceMemory::ServiceMemory(std::shared_ptr<memory::MessageMemory> strategy)
    : mode_(strategy ? std::string(strategy->name()) : std::string("default")),
      strategy_(std::move(strategy)) {
  if (strategy_ != nullptr) strategies_.emplace(mode_, strategy_);  // Serve(..., mode_) shares it
}

bool ServiceMemory::IsValidMode(std::string_view mode, std::string* error) {
  if (IsDefaultMode(mode) || mode == "heap" || mode == "arena" || mode == "paged" ||
      mode == "paged_arena" || mode == "reuse" || mode == "auto") {
    return true;
  }
  if (error != nullptr) {
    *error = "unknown memory mode " + Quoted(mode) +
             " (valid: default, heap, arena, paged, reuse, auto)";
  }
  return false;
}

std::shared_ptr<memory::MessageMemory> ServiceMemory::StrategyFor(std::string_view mode) {
  std::string error;
  if (!IsValidMode(mode, &error)) throw std::invalid_argument("arenarpc::grpc_memory: " + error);
  if (IsDefaultMode(mode)) return nullptr;
  std::lock_guard lock(mu_);
  auto it = strategies_.find(mode);
  if (it == strategies_.end()) {
    it = strategies_.emplace(std::string(mode), MakeStrategy(mode, options_)).first;
  }
  return it->second;
}

void ServiceMemory::Keep(std::unique_ptr<AllocatorBase> owned) {
  std::lock_guard lock(mu_);
  allocators_.push_back(std::move(owned));
}

memory::MemoryStats ServiceMemory::memory_stats() const noexcept {
  return strategy_ ? strategy_->stats() : memory::MemoryStats{};
}

memory::MemoryStats ServiceMemory::memory_stats(std::string_view mode) const {
  std::lock_guard lock(mu_);
  auto it = strategies_.find(mode);
  return it != strategies_.end() ? it->second->stats() : memory::MemoryStats{};
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

}  // namespace arenarpc::grpc_memory
