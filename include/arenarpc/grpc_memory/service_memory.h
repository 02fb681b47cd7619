#pragma once
// ServiceMemory: memory strategies for the methods of gRPC callback services, and the owner of
// what it installs.
//
//   std::string error;
//   auto memory = arenarpc::grpc_memory::ServiceMemory::Create("reuse", options, &error);
//   if (!memory) { ... error says why ... }                    // outlives the server
//   EchoServiceImpl service;                                    // a generated CallbackService
//   if (memory->Serve(service, "example.GrpcEchoService.Echo", &EchoServiceImpl::Echo,
//                     &error) != 0) { ... }
//   memory->Serve(service, "example.GrpcEchoService.Stats", &EchoServiceImpl::Stats, "heap",
//                 &error);
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
// Errors (docs/api-conventions.md): Create(), Serve() and allocator() return nullptr / -1 with a
// message in *error naming the problem (unknown mode, invalid options, unknown method, wrong
// types, not a callback unary method); nothing is installed then. The constructor, which has no
// return value, throws std::invalid_argument where Create() returns nullptr; the throwing Serve()
// and allocator() without `error` are deprecated for one release. IsValidMode() checks a mode
// (e.g. a command-line flag).

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
// `request` and return `response`; nullptr with *error otherwise.
const google::protobuf::MethodDescriptor* FindRpc(std::string_view full_name,
                                                  const google::protobuf::Descriptor& request,
                                                  const google::protobuf::Descriptor& response,
                                                  std::string* error);
// -1 with *error: `rpc` is not handled as a callback unary method.
int NotCallbackUnary(const google::protobuf::MethodDescriptor& rpc, std::string* error);
// The deprecated throwing spellings' exception.
[[noreturn]] void Throw(const std::string& error);

template <class Declaring, class Request, class Response>
using UnaryMethod = ::grpc::ServerUnaryReactor* (Declaring::*)(::grpc::CallbackServerContext*,
                                                                const Request*, Response*);
}  // namespace detail

class ServiceMemory {
 public:
  // `mode` is the default for Serve() and allocator(). nullptr with *error for an unknown mode or
  // invalid options.
  static std::unique_ptr<ServiceMemory> Create(std::string_view mode,
                                               const memory::MemoryOptions& options,
                                               std::string* error);
  // The same as a constructor: throws std::invalid_argument where Create() returns nullptr.
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
  // called virtually. Call before the server is built. 0, or -1 with *error (nothing changes)
  // when no linked .proto declares that rpc, when it does not take Request and return Response,
  // when `service` does not handle it as a callback unary method, or for an unknown mode.
  template <class Service, class Declaring, class Request, class Response>
  int Serve(Service& service, std::string_view full_name,
            detail::UnaryMethod<Declaring, Request, Response> method, std::string* error) {
    return Serve(service, full_name, method, strategy_, error);
  }
  template <class Service, class Declaring, class Request, class Response>
  int Serve(Service& service, std::string_view full_name,
            detail::UnaryMethod<Declaring, Request, Response> method, std::string_view mode,
            std::string* error) {
    std::shared_ptr<memory::MessageMemory> strategy = strategy_;
    if (!mode.empty() && StrategyFor(mode, &strategy, error) != 0) return -1;
    return Serve(service, full_name, method, std::move(strategy), error);
  }
  // The same with a strategy of your own (nullptr: gRPC's own allocation).
  template <class Service, class Declaring, class Request, class Response>
  int Serve(Service& service, std::string_view full_name,
            detail::UnaryMethod<Declaring, Request, Response> method,
            std::shared_ptr<memory::MessageMemory> strategy, std::string* error) {
    static_assert(
        std::is_base_of_v<Declaring, Service> && std::is_base_of_v<::grpc::Service, Service>,
        "Serve() needs a generated callback service and one of its methods");
    const google::protobuf::MethodDescriptor* rpc =
        detail::FindRpc(full_name, *Request::descriptor(), *Response::descriptor(), error);
    if (rpc == nullptr) return -1;
    ::grpc::internal::MethodHandler* current =
        detail::ServiceAccess::Handler(service, rpc->index());
    if (dynamic_cast<::grpc::internal::CallbackUnaryHandler<Request, Response>*>(current) ==
            nullptr &&
        dynamic_cast<MergingUnaryHandler<Request, Response>*>(current) == nullptr) {
      return detail::NotCallbackUnary(*rpc, error);
    }
    if (strategy == nullptr) return 0;  // "default"
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
        service, rpc->index(),
        std::make_unique<MergingUnaryHandler<Request, Response>>(std::move(get_reactor), served));
    return 0;
  }

  // An allocator for gRPC's generated SetMessageAllocatorFor_X(), owned by this object, for this
  // object's mode or `mode`. nullptr with *error left empty in "default" mode (gRPC then parses
  // and serializes itself, see message_allocator.h); nullptr with *error set for an unknown mode.
  template <class Request, class Response>
  MessageAllocator<Request, Response>* allocator(std::string* error) {
    return allocator<Request, Response>(std::string_view(), error);
  }
  template <class Request, class Response>
  MessageAllocator<Request, Response>* allocator(std::string_view mode, std::string* error) {
    std::shared_ptr<memory::MessageMemory> strategy = strategy_;
    if (!mode.empty() && StrategyFor(mode, &strategy, error) != 0) return nullptr;
    if (strategy == nullptr) return nullptr;
    auto owned = std::make_unique<MessageAllocator<Request, Response>>(std::move(strategy));
    auto* raw = owned.get();
    Keep(std::move(owned));
    return raw;
  }

  // The throwing spellings (std::invalid_argument), deprecated for one release.
  template <class Service, class Declaring, class Request, class Response>
  [[deprecated("use Serve(service, full_name, method, [mode,] &error)")]]
  void Serve(Service& service, std::string_view full_name,
             detail::UnaryMethod<Declaring, Request, Response> method,
             std::string_view mode = {}) {
    if (std::string error; Serve(service, full_name, method, mode, &error) != 0) {
      detail::Throw(error);
    }
  }
  template <class Service, class Declaring, class Request, class Response>
  [[deprecated("use Serve(service, full_name, method, strategy, &error)")]]
  void Serve(Service& service, std::string_view full_name,
             detail::UnaryMethod<Declaring, Request, Response> method,
             std::shared_ptr<memory::MessageMemory> strategy) {
    if (std::string error; Serve(service, full_name, method, std::move(strategy), &error) != 0) {
      detail::Throw(error);
    }
  }
  template <class Request, class Response>
  [[deprecated("use allocator<Request, Response>([mode,] &error)")]]
  MessageAllocator<Request, Response>* allocator(std::string_view mode = {}) {
    std::string error;
    MessageAllocator<Request, Response>* made = allocator<Request, Response>(mode, &error);
    if (!error.empty()) detail::Throw(error);
    return made;
  }

  // The default strategy's counters (all zero in "default" mode).
  memory::MemoryStats memory_stats() const noexcept;
  // The counters of the strategy of `mode` (all zero if nothing uses it).
  memory::MemoryStats memory_stats(std::string_view mode) const;
  // Holders handed out / released, summed over everything this object installed.
  HolderStats holder_stats() const;

 private:
  // The strategy of `mode` into *strategy (nullptr for "default"), created on first use; -1 with
  // *error for an unknown mode.
  int StrategyFor(std::string_view mode, std::shared_ptr<memory::MessageMemory>* strategy,
                  std::string* error);
  void Keep(std::unique_ptr<AllocatorBase> owned);
  explicit ServiceMemory(const memory::MemoryOptions& options);  // Create()'s, before the mode

  std::string mode_;
  memory::MemoryOptions options_;
  std::shared_ptr<memory::MessageMemory> strategy_;  // null in "default" mode
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<memory::MessageMemory>, std::less<>> strategies_;
  std::vector<std::unique_ptr<AllocatorBase>> allocators_;
};

}  // namespace arenarpc::grpc_memory
