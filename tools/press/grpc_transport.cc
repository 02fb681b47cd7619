#include "press/grpc_transport.h"

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/impl/codegen/proto_utils.h>  // SerializationTraits for protobuf messages
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "arenarpc/error_codes.h"

namespace arenarpc::press {

int GrpcStatusToErrorCode(::grpc::StatusCode code) noexcept {
  switch (code) {
    case ::grpc::StatusCode::OK: return 0;
    case ::grpc::StatusCode::DEADLINE_EXCEEDED: return ERPCTIMEDOUT;
    case ::grpc::StatusCode::UNAVAILABLE: return EFAILEDSOCKET;
    case ::grpc::StatusCode::UNIMPLEMENTED: return ENOMETHOD;
    case ::grpc::StatusCode::INVALID_ARGUMENT: return EREQUEST;
    case ::grpc::StatusCode::RESOURCE_EXHAUSTED: return ELIMIT;
    case ::grpc::StatusCode::UNAUTHENTICATED:
    case ::grpc::StatusCode::PERMISSION_DENIED: return ERPCAUTH;
    case ::grpc::StatusCode::CANCELLED: return ECLOSE;
    default: return EINTERNAL;
  }
}

namespace {

using Stub = ::grpc::TemplatedGenericStub<RawEchoRequest, RawEchoResponse>;

class GrpcTransport final : public Transport {
 public:
  bool Init(const TransportOptions& options, std::string* error) override {
    if (options.connection_type == "short") {
      *error = "grpc transport: connection_type 'short' is not supported (gRPC multiplexes calls "
               "on long-lived HTTP/2 connections; use single or pooled)";
      return false;
    }
    if (options.method != nullptr) {
      *error = "grpc transport: presses only the echo workload (--method needs --protocol "
               "baidu_std or http)";
      return false;
    }
    if (options.connections < 1 || options.timeout_ms <= 0) {
      *error = "grpc transport: connections must be >= 1 and timeout_ms > 0";
      return false;
    }
    timeout_ = std::chrono::milliseconds(options.timeout_ms);
    path_ = options.grpc_path.empty() ? kGrpcEchoMethod : options.grpc_path;
    for (int i = 0; i < options.connections; ++i) {
      ::grpc::ChannelArguments args;
      args.SetMaxReceiveMessageSize(-1);
      args.SetMaxSendMessageSize(-1);
      // Without these, channels with equal arguments share one subchannel (one TCP connection).
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      args.SetInt("arenarpc.press.channel_index", i);
      auto channel = ::grpc::CreateCustomChannel(options.server,
                                                 ::grpc::InsecureChannelCredentials(), args);
      if (!channel->WaitForConnected(std::chrono::system_clock::now() + timeout_)) {
        *error = "grpc transport: cannot connect to " + options.server + " within " +
                 std::to_string(options.timeout_ms) + " ms";
        return false;
      }
      stubs_.push_back(std::make_unique<Stub>(std::move(channel)));
    }
    return true;
  }

  void Send(const PressRequest& request, DoneCallback done) override {
    {
      std::lock_guard lock(mu_);
      ++pending_;
    }
    Stub& stub = *stubs_[next_.fetch_add(1, std::memory_order_relaxed) % stubs_.size()];
    auto call = std::make_unique<Call>(std::move(done));
    call->context.set_deadline(std::chrono::system_clock::now() + timeout_);
    Call* raw = call.release();  // owned by gRPC until the completion callback takes it back
    stub.UnaryCall(&raw->context, path_, ::grpc::StubOptions(), &request.echo, &raw->response,
                   [this, raw](::grpc::Status status) { Complete(raw, status); });
  }

  void Drain() override {
    std::unique_lock lock(mu_);
    drained_.wait(lock, [this] { return pending_ == 0; });
  }

  ~GrpcTransport() override { Drain(); }

 private:
  struct Call {
    explicit Call(DoneCallback done) : done(std::move(done)) {}
    DoneCallback done;
    ::grpc::ClientContext context;
    RawEchoResponse response;
  };

  void Complete(Call* raw, const ::grpc::Status& status) {
    {
      std::unique_ptr<Call> call(raw);
      CallResult result;
      result.error_code = GrpcStatusToErrorCode(status.error_code());
      std::string text;
      if (result.error_code != 0) {
        text = "grpc status " + std::to_string(static_cast<int>(status.error_code())) + ": " +
               status.error_message();
        result.error_text = text;
      } else {
        result.response_payload = call->response.payload();
      }
      call->done(result);
    }
    std::lock_guard lock(mu_);
    if (--pending_ == 0) drained_.notify_all();
  }

  std::chrono::milliseconds timeout_{1000};
  std::string path_;  // the echo method's gRPC path
  std::vector<std::unique_ptr<Stub>> stubs_;
  std::atomic<uint64_t> next_{0};
  std::mutex mu_;
  std::condition_variable drained_;
  int64_t pending_ = 0;
};

}  // namespace

std::unique_ptr<Transport> MakeGrpcTransport() { return std::make_unique<GrpcTransport>(); }

ARENARPC_PRESS_REGISTER_TRANSPORT("grpc", GrpcTransport);

}  // namespace arenarpc::press
