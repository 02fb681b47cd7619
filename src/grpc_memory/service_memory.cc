#include "arenarpc/grpc_memory/service_memory.h"

#include <google/protobuf/descriptor.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace arenarpc::grpc_memory {
namespace {

constexpr std::string_view kWhere = "arenarpc::grpc_memory::ServiceMemory::Serve: ";

std::string Quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

int Fail(std::string text, std::string* error) {
  if (error != nullptr) *error = std::move(text);
  return -1;
}

}  // namespace

namespace detail {

const google::protobuf::MethodDescriptor* FindRpc(std::string_view full_name,
                                                  const google::protobuf::Descriptor& request,
                                                  const google::protobuf::Descriptor& response,
                                                  std::string* error) {
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
    Fail(std::string(kWhere) + "no rpc " + Quoted(full_name) +
             " in the linked .proto files (name it as package.Service.Method; the generated "
             ".pb.cc of the file declaring the service must be linked in)",
         error);
    return nullptr;
  }
  if (rpc->input_type() != &request || rpc->output_type() != &response) {
    Fail(std::string(kWhere) + "rpc " + Quoted(full_name) + " takes " +
             rpc->input_type()->full_name() + " and returns " + rpc->output_type()->full_name() +
             ", but the handler takes " + request.full_name() + " and returns " +
             response.full_name(),
         error);
    return nullptr;
  }
  if (rpc->client_streaming() || rpc->server_streaming()) {
    Fail(std::string(kWhere) + "rpc " + Quoted(full_name) +
             " streams; only unary methods can be served",
         error);
    return nullptr;
  }
  return rpc;
}

int NotCallbackUnary(const google::protobuf::MethodDescriptor& rpc, std::string* error) {
  return Fail(std::string(kWhere) + "the service does not handle rpc " + Quoted(rpc.full_name()) +
                  " as a callback unary method (pass the generated CallbackService of " +
                  rpc.service()->full_name() + ")",
              error);
}

void Throw(const std::string& error) { throw std::invalid_argument(error); }

}  // namespace detail

std::unique_ptr<ServiceMemory> ServiceMemory::Create(std::string_view mode,
                                                     const memory::MemoryOptions& options,
                                                     std::string* error) {
  // The same flags are accepted in every mode.
  if (memory::ValidateMemoryOptions(options, error) != 0) return nullptr;
  std::unique_ptr<ServiceMemory> made(new ServiceMemory(options));
  made->mode_ = std::string(mode);
  if (made->StrategyFor(mode, &made->strategy_, error) != 0) return nullptr;
  return made;
}

ServiceMemory::ServiceMemory(std::string_view mode, const memory::MemoryOptions& options)
    : mode_(mode), options_(options) {
  std::string error;
  if (memory::ValidateMemoryOptions(options, &error) != 0 ||
      StrategyFor(mode, &strategy_, &error) != 0) {
    detail::Throw(error);
  }
}

ServiceMemory::ServiceMemory(const memory::MemoryOptions& options) : options_(options) {}

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

int ServiceMemory::StrategyFor(std::string_view mode,
                               std::shared_ptr<memory::MessageMemory>* strategy,
                               std::string* error) {
  if (std::string invalid; !IsValidMode(mode, &invalid)) {
    return Fail("arenarpc::grpc_memory: " + invalid, error);
  }
  if (IsDefaultMode(mode)) {
    strategy->reset();
    return 0;
  }
  std::lock_guard lock(mu_);
  auto it = strategies_.find(mode);
  if (it == strategies_.end()) {
    std::shared_ptr<memory::MessageMemory> made = MakeStrategy(mode, options_, error);
    if (made == nullptr) return -1;  // options_ were validated: only resources fail here
    it = strategies_.emplace(std::string(mode), std::move(made)).first;
  }
  *strategy = it->second;
  return 0;
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
