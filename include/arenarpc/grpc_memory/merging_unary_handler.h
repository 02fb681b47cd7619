#pragma once
// The callback unary method handler that ServiceMemory::Serve() installs.
//
// It wraps gRPC's own CallbackUnaryHandler; only the two message steps change, both handed to the
// method's memory strategy: Deserialize() takes a call's messages from the strategy and fills the
// request with MessagePair::ParseRequest (request_payload.h), and the reply is prepared with
// MessagePair::PrepareResponse just before gRPC serializes it (prepared_response.h). Running the
// reactor, Finish(), cancellation and the holder's Release() stay gRPC's own code.

#include <grpcpp/impl/codegen/server_callback_handlers.h>

#include <functional>
#include <memory>
#include <utility>

#include "arenarpc/grpc_memory/message_allocator.h"
#include "arenarpc/grpc_memory/prepared_response.h"
#include "arenarpc/grpc_memory/request_payload.h"

namespace arenarpc::grpc_memory {

// One served method's binding to its strategy, and the holders of its calls.
template <class Request, class Response>
class ServedMethod final : public AllocatorBase {
 public:
  explicit ServedMethod(std::shared_ptr<memory::MessageMemory> memory)
      : core_(std::move(memory), Request::default_instance(), Response::default_instance()) {}

  class Holder final : public CallHolder<Request, PreparedResponse<Response>> {
   public:
    Holder(memory::MessagePair pair, MethodAllocatorCore* core)
        : CallHolder<Request, PreparedResponse<Response>>(std::move(pair), core),
          response_(&this->pair()) {
      this->set_response(&response_);
    }

   private:
    PreparedResponse<Response> response_;
  };

  Holder* Allocate() {
    // gRPC takes the holder and hands it back through Release(); it cannot take a smart pointer.
    return std::make_unique<Holder>(core_.Acquire(), &core_).release();
  }
  HolderStats holder_stats() const noexcept override { return core_.holder_stats(); }

 private:
  MethodAllocatorCore core_;
};

template <class Request, class Response>
class MergingUnaryHandler final : public ::grpc::internal::MethodHandler {
 public:
  // Calls the service's method with response->message().
  using ReactorGetter = std::function<::grpc::ServerUnaryReactor*(
      ::grpc::CallbackServerContext*, const Request*, PreparedResponse<Response>*)>;

  // `method` must outlive the handler (the service owns the handler once installed).
  MergingUnaryHandler(ReactorGetter get_reactor, ServedMethod<Request, Response>* method)
      : inner_(std::move(get_reactor)), method_(method) {}

  void RunHandler(const HandlerParameter& param) override { inner_.RunHandler(param); }

  void* Deserialize(grpc_call* /*call*/, grpc_byte_buffer* request_payload, ::grpc::Status* status,
                    void** handler_data) override {
    auto* holder = method_->Allocate();
    // gRPC's RunHandler takes the holder from here and releases it, even when parsing failed.
    *handler_data = holder;
    *status = ParseRequestPayload(request_payload, holder->pair());
    return status->ok() ? holder->request() : nullptr;
  }

 private:
  ::grpc::internal::CallbackUnaryHandler<Request, PreparedResponse<Response>> inner_;
  ServedMethod<Request, Response>* method_;
};

}  // namespace arenarpc::grpc_memory
