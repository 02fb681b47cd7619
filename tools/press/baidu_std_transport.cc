// baidu_std transport of arenarpc_press: arenarpc::Channel (works against brpc servers too), for
// the echo workload or any method (--method). "grpc_channel" is the same Channel speaking gRPC
// (ChannelOptions::protocol "grpc"), to any gRPC server.
#include <condition_variable>
#include <mutex>

#include "arenarpc/channel.h"
#ifdef ARENARPC_PRESS_WITH_ETCD
#include "arenarpc/cluster/etcd.h"  // --server etcd://host:port/prefix
#endif
#include "arenarpc/controller.h"
#include "echo/echo.pb.h"
#include "press/transport.h"

namespace arenarpc::press {
namespace {

class BaiduStdTransport : public Transport {
 public:
  explicit BaiduStdTransport(std::string protocol = "baidu_std") : protocol_(std::move(protocol)) {}
  bool Init(const TransportOptions& options, std::string* error) override {
    method_ = options.method != nullptr
                  ? options.method
                  : EchoMethod(options);
    echo_ = options.method == nullptr;
    response_prototype_ = options.response_prototype;
    ChannelOptions channel_options;
    channel_options.protocol = protocol_;
    channel_options.timeout_ms = options.timeout_ms;
    channel_options.deliver_timeout = options.deliver_timeout;
    channel_options.connection_type = options.connection_type;
    channel_options.io_threads = options.io_threads;
    channel_options.tls.enable = options.tls;
    channel_options.tls.ca_file = options.tls_ca_file;
    channel_options.tls.sni_host = options.tls_sni_host;
    // The done only hands the result over: run it on the I/O thread, without the extra hop of
    // the callback threads, so that results stay comparable with earlier runs.
    channel_options.callback_threads = 0;
    for (int i = 0; i < options.connections; ++i) {
      auto channel = std::make_unique<Channel>();
      const int rc = options.load_balancer.empty()
                         ? channel->Init(options.server, &channel_options)
                         : channel->Init(options.server.c_str(), options.load_balancer.c_str(),
                                         &channel_options);
      if (rc != 0) {
        *error = "channel to " + options.server + ": " + channel->last_error();
        return false;
      }
      channels_.push_back(std::move(channel));
    }
    return true;
  }

  void Send(const PressRequest& request, DoneCallback done) override {
    {
      std::lock_guard lock(mu_);
      ++pending_;
    }
    Channel& channel = *channels_[next_.fetch_add(1, std::memory_order_relaxed) % channels_.size()];
    auto call = std::make_unique<Call>(this, std::move(done));
    google::protobuf::Message* response = &call->echo_response;
    if (!echo_) {
      // Unchecked responses land in an OpaqueMessage: kept as bytes, never walked by type.
      if (response_prototype_ != nullptr) {
        call->user_response.reset(response_prototype_->New());
      } else {
        call->user_response = std::make_unique<OpaqueMessage>();
      }
      response = call->user_response.get();
    }
    Call* raw = call.release();  // owned by the channel until Run(), which takes it back
    channel.CallMethod(method_, &raw->controller, &request.binary(), response, raw);
  }

  std::map<std::string, uint64_t> ServerAttempts() const override {
    std::map<std::string, uint64_t> attempts;
    for (const auto& channel : channels_) {
      for (const ServerInfo& server : channel->servers()) attempts[server.address] += server.attempts;
    }
    return attempts;
  }

  void Drain() override {
    std::unique_lock lock(mu_);
    drained_.wait(lock, [this] { return pending_ == 0; });
  }

  ~BaiduStdTransport() override {
    Drain();
    channels_.clear();
  }

 private:
  struct Call final : google::protobuf::Closure {
    Call(BaiduStdTransport* owner, DoneCallback done) : owner(owner), done(std::move(done)) {}
    void Run() override {
      std::unique_ptr<Call> self(this);
      CallResult result;
      result.error_code = controller.ErrorCode();
      std::string text;
      if (result.error_code != 0) {
        text = controller.ErrorText();
        result.error_text = text;
      } else if (user_response == nullptr) {
        result.response_payload = echo_response.payload();
      } else {
        result.response_message = user_response.get();
      }
      done(result);
      BaiduStdTransport* transport = owner;
      self.reset();
      transport->Finished();
    }
    BaiduStdTransport* owner;
    DoneCallback done;
    Controller controller;
    RawEchoResponse echo_response;
    std::unique_ptr<google::protobuf::Message> user_response;  // --method
  };

  void Finished() {
    std::lock_guard lock(mu_);
    if (--pending_ == 0) drained_.notify_all();
  }

  const std::string protocol_;
  const google::protobuf::MethodDescriptor* method_ = nullptr;
  bool echo_ = true;
  const google::protobuf::Message* response_prototype_ = nullptr;
  std::vector<std::unique_ptr<Channel>> channels_;
  std::atomic<uint64_t> next_{0};
  std::mutex mu_;
  std::condition_variable drained_;
  int64_t pending_ = 0;
};

class ChannelGrpcTransport final : public BaiduStdTransport {
 public:
  ChannelGrpcTransport() : BaiduStdTransport("grpc") {}
};

}  // namespace

ARENARPC_PRESS_REGISTER_TRANSPORT("baidu_std", BaiduStdTransport);
ARENARPC_PRESS_REGISTER_TRANSPORT("grpc_channel", ChannelGrpcTransport);

}  // namespace arenarpc::press
