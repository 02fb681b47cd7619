#pragma once
// ServiceMemory: memory strategies for the methods of gRPC callback services, and the owner of
// what it installs.
//
//   arenarpc::grpc_memory::ServiceMemory memory("reuse", options);   // outlives the server
//   EchoServiceImpl service;                                  // a generated CallbackService
//   memory.Serve(service, "example.GrpcEchoService.Echo", &EchoServiceImpl::Echo);
//   memory.Serve(service, "example.GrpcEchoService.Stats", &EchoServiceImpl::Stats, "heap");
//
// Serve() hands the method's message lifecycle to a strategy: requests are filled and responses
// prepared for serialization by the strategy (MessagePair::ParseRequest / PrepareResponse), so a
// reply's bytes are the same in every mode whatever the handler does. The method is named by its
// full protobuf name and checked against the linked descriptors.
//
// Modes: "heap", "arena", "paged", "reuse", "auto", or "default" (gRPC's own allocation: Serve()
// checks the binding and leaves gRPC's handler in place). Each mode's strategy is created once per
// ServiceMemory and shared by the methods served in it.
//
// Errors: the constructor, Serve() and allocator() throw std::invalid_argument with a message
// naming the problem (unknown mode, invalid options, unknown method, wrong types, not a callback
// unary method); they are configuration calls, made before the server is built. IsValidMode()
// checks a mode (e.g. a command-line flag) without throwing.

#include <google/protobuf/descriptor.h>
#include <grpcpp/impl/service_type.h>

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "arenarpc/grpc_memory/merging_unary_handler.h"
#include "arenarpc/grpc_memory/message_allocator.h"

namespace arenarpc::grpc_memory {

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

// The rpc `full_name` ("package.Service.Method") from the linked descriptors, checked to take
// `request` and return `response`. Throws std::invalid_argument otherwise.
const google::protobuf::MethodDescriptor& FindRpc(std::string_view full_name,
                                                  const google::protobuf::Descriptor& request,
                                                  const google::protobuf::Descriptor& response);
[[noreturn]] void ThrowNotCallbackUnary(const google::protobuf::MethodDescriptor& rpc);
}  // namespace detail

class ServiceMemory {
 public:
  // `mode` is the default for Serve() and allocator(). Throws std::invalid_argument for an unknown
  // mode or invalid options.
  explicit ServiceMemory(std::string_view mode, const memory::MemoryOptions& options = {});
  // Uses `strategy` (e.g. shared with the arenarpc runtime, or your own MessageMemory) as the
  // default; nullptr means "default". Other modes named in Serve() are built with default options.
  explicit ServiceMemory(std::shared_ptr<memory::MessageMemory> strategy);
  ServiceMemory(const ServiceMemory&) = delete;
  ServiceMemory& operator=(const ServiceMemory&) = delete;

  // True for "default", "heap", "arena", "paged", "reuse" and "auto"; otherwise false with *error set.
  static bool IsValidMode(std::string_view mode, std::string* error = nullptr);

  const std::string& mode() const noexcept { return mode_; }
  bool is_default() const noexcept { return strategy_ == nullptr; }

  // Serves rpc `full_name` ("package.Service.Method") of `service` with this object's mode, or
  // with `mode` when given. `method` is the service's handler, e.g. &EchoServiceImpl::Echo; it is
  // called virtually. Call before the server is built. Throws std::invalid_argument when no linked
  // .proto declares that rpc, when it does not take Request and return Response, when `service`
  // does not handle it as a callback unary method, or for an unknown mode.
  template <class Service, class Declaring, class Request, class Response>
  void Serve(Service& service, std::string_view full_name,
             ::grpc::ServerUnaryReactor* (Declaring::*method)(::grpc::CallbackServerContext*,
                                                              const Request*, Response*),
             std::string_view mode = {}) {
    Serve(service, full_name, method, mode.empty() ? strategy_ : StrategyFor(mode));
  }
  // The same with a strategy of your own (nullptr: gRPC's own allocation).
  template <class Service, class Declaring, class Request, class Response>
  void Serve(Service& service, std::string_view full_name,
             ::grpc::ServerUnaryReactor* (Declaring::*method)(::grpc::CallbackServerContext*,
                                                              const Request*, Response*),
             std::shared_ptr<memory::MessageMemory> strategy) {
    static_assert(
        std::is_base_of_v<Declaring, Service> && std::is_base_of_v<::grpc::Service, Service>,
        "Serve() needs a generated callback service and one of its methods");
    const google::protobuf::MethodDescriptor& rpc =
        detail::FindRpc(full_name, *Request::descriptor(), *Response::descriptor());
    ::grpc::internal::MethodHandler* current = detail::ServiceAccess::Handler(service, rpc.index());
    if (dynamic_cast<::grpc::internal::CallbackUnaryHandler<Request, Response>*>(current) ==
            nullptr &&
        dynamic_cast<MergingUnaryHandler<Request, Response>*>(current) == nullptr) {
      detail::ThrowNotCallbackUnary(rpc);
    }
    if (strategy == nullptr) return;  // "default"
    auto owned = std::make_unique<ServedMethod<Request, Response>>(std::move(strategy));
    ServedMethod<Request, Response>* served = owned.get();
    Keep(std::move(owned));
    Service* target = &service;
    auto get_reactor = [target, method](::grpc::CallbackServerContext* context,
                                        const Request* request,
                                        PreparedResponse<Response>* response) {
      return (target->*method)(context, request, response->message());
    };
    detail::ServiceAccess::SetCallbackHandler(
        service, rpc.index(),
        std::make_unique<MergingUnaryHandler<Request, Response>>(std::move(get_reactor), served));
  }

  // An allocator for gRPC's generated SetMessageAllocatorFor_X(), owned by this object; nullptr
  // in "default" mode. gRPC then parses and serializes itself (see message_allocator.h).
  template <class Request, class Response>
  MessageAllocator<Request, Response>* allocator(std::string_view mode = {}) {
    std::shared_ptr<memory::MessageMemory> strategy = mode.empty() ? strategy_ : StrategyFor(mode);
    if (strategy == nullptr) return nullptr;
    auto owned = std::make_unique<MessageAllocator<Request, Response>>(std::move(strategy));
    auto* raw = owned.get();
    Keep(std::move(owned));
    return raw;
  }

  // The default strategy's counters (all zero in "default" mode).
  memory::MemoryStats memory_stats() const noexcept;
  // The counters of the strategy of `mode` (all zero if nothing uses it).
  memory::MemoryStats memory_stats(std::string_view mode) const;
  // Holders handed out / released, summed over everything this object installed.
  HolderStats holder_stats() const;

 private:
  // The strategy of `mode` (nullptr for "default"), created on first use. Throws invalid_argument.
  std::shared_ptr<memory::MessageMemory> StrategyFor(std::string_view mode);
  void Keep(std::unique_ptr<AllocatorBase> owned);

  std::string mode_;
  memory::MemoryOptions options_;
  std::shared_ptr<memory::MessageMemory> strategy_;  // null in "default" mode
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<memory::MessageMemory>, std::less<>> strategies_;
  std::vector<std::unique_ptr<AllocatorBase>> allocators_;
};

}  // namespace arenarpc::grpc_memory
