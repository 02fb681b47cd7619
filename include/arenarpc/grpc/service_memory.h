#pragma once
// ServiceMemory: one memory strategy for the methods of a gRPC callback service, and the owner of
// the allocators it hands to gRPC.
//
//   arenarpc::grpc::ServiceMemory memory("reuse", options);   // outlives the server
//   GrpcEchoService::CallbackService service;                 // your subclass
//   memory.Serve(service, 0, &GrpcEchoService::CallbackService::Echo);   // merge-parse path
//   // or, through gRPC's generated setter (gRPC parses with ParseFrom):
//   service.SetMessageAllocatorFor_Echo(memory.allocator<EchoRequest, EchoResponse>());
//
// Mode "default" leaves gRPC's own allocation in place (allocator() returns nullptr, Serve() does
// nothing) so that one flag can switch between gRPC's default and every strategy.

#include <grpcpp/impl/service_type.h>

#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "arenarpc/grpc/merging_unary_handler.h"
#include "arenarpc/grpc/message_allocator.h"

namespace arenarpc::grpc {

namespace detail {
// Reaches grpc::Service's protected handler table, as the generated code does.
struct ServiceAccess : ::grpc::Service {
  static ::grpc::internal::MethodHandler* Handler(::grpc::Service& service, int index) {
    return (service.*&ServiceAccess::GetHandler)(index);
  }
  static void SetCallbackHandler(::grpc::Service& service, int index,
                                 std::unique_ptr<::grpc::internal::MethodHandler> handler) {
    (service.*&ServiceAccess::MarkMethodCallback)(index, handler.release());  // service owns it
  }
};
}  // namespace detail

class ServiceMemory {
 public:
  // Throws std::invalid_argument for an unknown mode or invalid options.
  explicit ServiceMemory(std::string_view mode, const memory::MemoryOptions& options = {});
  // Shares an existing strategy (e.g. with the arenarpc runtime) between services.
  explicit ServiceMemory(std::shared_ptr<memory::MessageMemory> strategy);
  ServiceMemory(const ServiceMemory&) = delete;
  ServiceMemory& operator=(const ServiceMemory&) = delete;

  const std::string& mode() const noexcept { return mode_; }
  bool is_default() const noexcept { return strategy_ == nullptr; }

  // An allocator for one method, owned by this object; nullptr in "default" mode.
  template <class Request, class Response>
  MessageAllocator<Request, Response>* allocator() {
    if (is_default()) return nullptr;
    auto owned = std::make_unique<MessageAllocator<Request, Response>>(strategy_);
    auto* raw = owned.get();
    Keep(std::move(owned));
    return raw;
  }

  // Installs the strategy on callback unary method `method_index` (its position in the .proto's
  // service, from 0) of `service`, with merge-parse deserialization. `method` is the service's
  // handler, e.g. &GrpcEchoService::CallbackService::Echo; it is called virtually. Call before
  // the server is built. Throws std::invalid_argument when that method is not a callback unary
  // method of these types (an index past the last method is not detectable: gRPC does not
  // expose the count).
  template <class Service, class Declaring, class Request, class Response>
  void Serve(Service& service, int method_index,
             ::grpc::ServerUnaryReactor* (Declaring::*method)(::grpc::CallbackServerContext*,
                                                              const Request*, Response*)) {
    static_assert(
        std::is_base_of_v<Declaring, Service> && std::is_base_of_v<::grpc::Service, Service>,
        "Serve() needs a generated callback service and one of its methods");
    ::grpc::internal::MethodHandler* current =
        method_index < 0 ? nullptr : detail::ServiceAccess::Handler(service, method_index);
    if (dynamic_cast<::grpc::internal::CallbackUnaryHandler<Request, Response>*>(current) ==
            nullptr &&
        dynamic_cast<MergingUnaryHandler<Request, Response>*>(current) == nullptr) {
      throw std::invalid_argument("arenarpc::grpc::ServiceMemory::Serve: method " +
                                  std::to_string(method_index) +
                                  " is not a callback unary method of the given types");
    }
    if (is_default()) return;
    auto* alloc = allocator<Request, Response>();
    Service* target = &service;
    auto get_reactor = [target, method](::grpc::CallbackServerContext* context,
                                        const Request* request, Response* response) {
      return (target->*method)(context, request, response);
    };
    detail::ServiceAccess::SetCallbackHandler(
        service, method_index,
        std::make_unique<MergingUnaryHandler<Request, Response>>(std::move(get_reactor), alloc));
  }

  // The strategy's counters (all zero in "default" mode).
  memory::MemoryStats memory_stats() const noexcept;
  // Holders handed out / released, summed over this object's allocators.
  HolderStats holder_stats() const;

 private:
  void Keep(std::unique_ptr<AllocatorBase> owned) {
    std::lock_guard lock(mu_);
    allocators_.push_back(std::move(owned));
  }

  std::string mode_;
  std::shared_ptr<memory::MessageMemory> strategy_;  // null in "default" mode
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<AllocatorBase>> allocators_;
};

}  // namespace arenarpc::grpc
