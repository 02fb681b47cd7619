#include "arenarpc/grpc_memory/release_at_serialize.h"

#include <grpcpp/server_context.h>
#include <grpcpp/support/interceptor.h>

#include "arenarpc/grpc_memory/message_allocator.h"

namespace arenarpc::grpc_memory {
namespace {

using ::grpc::experimental::InterceptionHookPoints;

class ReleaseAtSerialize final : public ::grpc::experimental::Interceptor {
 public:
  explicit ReleaseAtSerialize(::grpc::experimental::ServerRpcInfo* info) : info_(info) {}

  void Intercept(::grpc::experimental::InterceptorBatchMethods* methods) override {
    // PRE_SEND_MESSAGE runs inside Finish(OK), before the batch that sends the reply is started,
    // so gRPC cannot complete the call (and release the holder) while this runs.
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_MESSAGE)) {
      if (CallMessages* messages = MessagesOf(info_->server_context())) {
        methods->GetSerializedSendMessage();  // serializes the response now; gRPC sends the bytes
        messages->ReleaseAtSerialize();
      }
    }
    methods->Proceed();
  }

 private:
  static CallMessages* MessagesOf(::grpc::ServerContextBase* context) {
    auto* callback = dynamic_cast<::grpc::CallbackServerContext*>(context);
    return callback != nullptr ? dynamic_cast<CallMessages*>(callback->GetRpcAllocatorState())
                               : nullptr;
  }

  ::grpc::experimental::ServerRpcInfo* info_;
};

class ReleaseAtSerializeFactory final
    : public ::grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  ::grpc::experimental::Interceptor* CreateServerInterceptor(
      ::grpc::experimental::ServerRpcInfo* info) override {
    if (info->type() != ::grpc::experimental::ServerRpcInfo::Type::UNARY) return nullptr;
    // gRPC owns the interceptor from here and deletes it with the call.
    return std::make_unique<ReleaseAtSerialize>(info).release();
  }
};

}  // namespace

std::unique_ptr<::grpc::experimental::ServerInterceptorFactoryInterface>
ReleaseAtSerializeInterceptorFactory() {
  return std::make_unique<ReleaseAtSerializeFactory>();
}

}  // namespace arenarpc::grpc_memory
