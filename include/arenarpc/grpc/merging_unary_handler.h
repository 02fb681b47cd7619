#pragma once
// A callback unary method handler that fills each request with MergeFrom (not ParseFrom).
//
// It wraps gRPC's own CallbackUnaryHandler: gRPC's Deserialize() step is replaced by one that
// takes the holder from our allocator and merges the payload into its (already empty) request, so
// a reuse-strategy request keeps its sub-message tree; running the reactor, Finish(), cancellation
// and the holder's Release() stay gRPC's own code.

#include <grpcpp/impl/codegen/server_callback_handlers.h>

#include <functional>
#include <utility>

#include "arenarpc/grpc/byte_buffer_merge.h"
#include "arenarpc/grpc/message_allocator.h"

namespace arenarpc::grpc {

template <class Request, class Response>
class MergingUnaryHandler final : public ::grpc::internal::MethodHandler {
 public:
  using ReactorGetter = std::function<::grpc::ServerUnaryReactor*(::grpc::CallbackServerContext*,
                                                                  const Request*, Response*)>;

  // `allocator` must outlive the handler (the service owns the handler once installed).
  MergingUnaryHandler(ReactorGetter get_reactor, MessageAllocator<Request, Response>* allocator)
      : inner_(std::move(get_reactor)), allocator_(allocator) {}

  void RunHandler(const HandlerParameter& param) override { inner_.RunHandler(param); }

  void* Deserialize(grpc_call* /*call*/, grpc_byte_buffer* request_payload, ::grpc::Status* status,
                    void** handler_data) override {
    auto* holder = allocator_->Allocate();
    // gRPC's RunHandler takes the holder from here and releases it, even when parsing failed.
    *handler_data = holder;
    *status = MergeFromByteBuffer(request_payload, *holder->request(), &holder->pair());
    if (!status->ok()) return nullptr;
    holder->SettleRequest();  // detach kept sub-messages the payload left unset (reuse only)
    return holder->request();
  }

 private:
  ::grpc::internal::CallbackUnaryHandler<Request, Response> inner_;
  MessageAllocator<Request, Response>* allocator_;
};

}  // namespace arenarpc::grpc
