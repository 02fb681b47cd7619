#include "arenarpc/channel.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <asio/post.hpp>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <utility>

#include "arenarpc/controller.h"
#include "arenarpc/error_codes.h"
#include "call/interceptor_chain.h"
#include "client/deprecated_channel_options.h"
#include "client/option_checks.h"
#include "client/channel_core.h"
#include "client/client_call.h"
#include "client/server_pool.h"
#include "cluster/load_balancer.h"
#include "cluster/naming_service.h"
#include "net/endpoint.h"

namespace arenarpc {
namespace {

// Empty string = valid.
std::string ValidateOptions(const ChannelOptions& o) {
  if (auto e = client::CheckTimeoutMs("timeout_ms", o.timeout_ms); !e.empty()) return e;
  if (auto e = client::CheckTimeoutMs("connect_timeout_ms", o.connect_timeout_ms); !e.empty()) {
    return e;
  }
  if (auto e = client::CheckMaxRetry(o.max_retry); !e.empty()) return e;
  if (std::ranges::find(o.interceptors, nullptr) != o.interceptors.end()) {
    return "interceptors holds a null interceptor";
  }
  if (!o.connection_type.valid()) {
    return "connection_type=\"" + std::string(o.connection_type.name()) +
           "\" is unknown (expected \"single\", \"pooled\" or \"short\")";
  }
  if (o.max_body_size == 0 || o.max_body_size > 0xFFFFFFFFu) {
    return "max_body_size=" + std::to_string(o.max_body_size) + " must be in [1, 4294967295]";
  }
  if (o.io_threads < 1 || o.io_threads > 256) {
    return "io_threads=" + std::to_string(o.io_threads) + " must be in [1, 256]";
  }
  if (o.callback_threads < 0 || o.callback_threads > 256) {
    return "callback_threads=" + std::to_string(o.callback_threads) +
           " must be in [0, 256] (0 = run done on the I/O thread)";
  }
  if (!o.protocol.valid()) {
    return "protocol=\"" + std::string(o.protocol.name()) +
           "\" is not supported (\"baidu_std\", \"grpc\" or \"h2:grpc\")";
  }
  if (o.protocol == ChannelProtocol::kGrpc) {
    if (o.grpc_max_concurrent_streams < 1 || o.grpc_stream_window < 1 ||
        o.grpc_stream_window > 0x7fffffffu || o.grpc_max_header_list_bytes < 1) {
      return "grpc_max_concurrent_streams, grpc_stream_window (<= 2^31-1) and "
             "grpc_max_header_list_bytes must be >= 1";
    }
    if (o.grpc_connection_window < 65535 || o.grpc_connection_window > 0x7fffffffu) {
      return "grpc_connection_window=" + std::to_string(o.grpc_connection_window) +
             " is invalid (expected 65535..2147483647)";
    }
    if (o.grpc_max_frame_size < 16384 || o.grpc_max_frame_size > 16777215) {
      return "grpc_max_frame_size=" + std::to_string(o.grpc_max_frame_size) +
             " is invalid (expected 16384..16777215)";
    }
    if (o.grpc_max_window != 0 &&
        (o.grpc_max_window < 65535 || o.grpc_max_window > 0x7fffffffu)) {
      return "grpc_max_window=" + std::to_string(o.grpc_max_window) +
             " is invalid (expected 0 = off, or 65535..2147483647)";
    }
  }
  if (o.max_pooled_connections < 0) {
    return "max_pooled_connections=" + std::to_string(o.max_pooled_connections) + " must be >= 0";
  }
  if (o.backup_request_ms <= 0 && o.backup_request_ms != -1) {
    return "backup_request_ms=" + std::to_string(o.backup_request_ms) + " must be > 0 or -1 (off)";
  }
  for (const auto& [name, value] :
       {std::pair<const char*, std::chrono::milliseconds>{"health_check_interval",
                                                          o.health_check_interval},
        {"health_check_timeout", o.health_check_timeout},
        {"naming_refresh_interval", o.naming_refresh_interval}}) {
    if (auto e = client::CheckInterval(name, value); !e.empty()) return e;
  }
  if (o.max_unwritten_bytes == 0) return "max_unwritten_bytes=0 must be >= 1";
  if (auto e = client::CheckStuckTimeout("read_timeout", o.read_timeout); !e.empty()) return e;
  if (auto e = client::CheckStuckTimeout("write_timeout", o.write_timeout); !e.empty()) return e;
  if (o.max_consecutive_timeouts < 0) {
    return "max_consecutive_timeouts=" + std::to_string(o.max_consecutive_timeouts) +
           " must be >= 0 (0 = never)";
  }
  if (o.max_decompressed_size == 0) return "max_decompressed_size=0 must be >= 1";
  if (!o.health_check_path.empty() &&
      (o.health_check_path.front() != '/' ||
       o.health_check_path.find_first_of(" \r\n") != std::string::npos)) {
    return "health_check_path=\"" + o.health_check_path +
           "\" must start with '/' and contain no blank or line break";
  }
  return {};
}

// Fails a call that never started; done still runs on a runtime thread (or inline without one).
void FailBeforeStart(client::ChannelCore* core, Controller* controller, int code,
                     const std::string& text, google::protobuf::Closure* done) {
  if (controller != nullptr) controller->SetFailed(code, "[E" + std::to_string(code) + "]" + text);
  if (done == nullptr) return;
  if (core == nullptr || core->shutting_down()) {
    done->Run();
  } else if (!core->PostCallback([done] { done->Run(); })) {
    asio::post(core->loops().Next(), [done] { done->Run(); });
  }
}

// An asynchronous call's done behind ChannelOptions::interceptors: their AfterReceive first.
class AfterReceiveDone final : public google::protobuf::Closure {
 public:
  AfterReceiveDone(std::shared_ptr<client::ChannelCore> core,
                   const google::protobuf::MethodDescriptor& method, Controller& controller,
                   const google::protobuf::Message& response, google::protobuf::Closure* done)
      : core_(std::move(core)),
        method_(method),
        controller_(controller),
        response_(response),
        done_(done) {}
  void Run() override {
    std::unique_ptr<AfterReceiveDone> self(this);
    internal::RunAfterReceive(core_->options().interceptors, method_, controller_, response_);
    done_->Run();
  }

 private:
  const std::shared_ptr<client::ChannelCore> core_;  // owns the interceptors
  const google::protobuf::MethodDescriptor& method_;
  Controller& controller_;
  const google::protobuf::Message& response_;
  google::protobuf::Closure* const done_;
};

}  // namespace

Channel::Channel() = default;

Channel::~Channel() {
  if (core_) core_->Shutdown();
}

bool Channel::CheckInit(const ChannelOptions* options, ChannelOptions* effective) {
  if (core_) {
    last_error_ = "Channel is already initialized (to " + core_->remote_side() + ")";
    return false;
  }
  *effective = options != nullptr ? *options : ChannelOptions{};
  client::ApplyDeprecatedSpellings(effective);
  if (std::string error = ValidateOptions(*effective); !error.empty()) {
    last_error_ = "invalid ChannelOptions: " + error;
    return false;
  }
  return true;
}

int Channel::Init(std::string_view server_address, const ChannelOptions* options) {
  ChannelOptions effective;
  if (!CheckInit(options, &effective)) return -1;
  asio::ip::tcp::endpoint endpoint;
  std::string error;
  if (!net::ParseEndpoint(server_address, &endpoint, &error)) {
    last_error_ = "invalid server address \"" + std::string(server_address) + "\": " + error;
    return -1;
  }
  if (endpoint.port() == 0 || endpoint.address().is_unspecified()) {
    last_error_ = "invalid server address \"" + std::string(server_address) +
                  "\": a client needs a concrete host and a non-zero port";
    return -1;
  }
  auto core = std::make_shared<client::ChannelCore>(effective, net::EndpointToString(endpoint));
  // The host part, when it is a name (not an IP literal), is what TLS verifies by default.
  std::string host(server_address.substr(0, server_address.rfind(':')));
  asio::error_code not_ip;
  asio::ip::make_address(host, not_ip);
  if (!not_ip || host.empty() || host.front() == '[' || host == "*") host.clear();
  if (!core->InitTls(host, &last_error_)) {
    core->Shutdown();
    return -1;
  }
  core->InitSingle(endpoint);
  core_ = std::move(core);
  last_error_.clear();
  return 0;
}

int Channel::InitCluster(std::string_view naming_url, std::string_view load_balancer,
                         const ChannelOptions* options) {
  ChannelOptions effective;
  if (!CheckInit(options, &effective)) return -1;
  std::string error;
  if (!cluster::MakeLoadBalancer(load_balancer, &error)) {  // before any naming-service error
    last_error_ = error;
    return -1;
  }
  cluster::NamingOptions naming_options;
  naming_options.refresh_interval = effective.naming_refresh_interval;
  std::unique_ptr<cluster::NamingService> naming =
      cluster::MakeNamingService(naming_url, naming_options, &error);
  if (!naming) {
    last_error_ = error;
    return -1;
  }
  return InitWithNaming(std::move(naming), std::string(naming_url), load_balancer, options);
}

int Channel::InitWithNaming(std::unique_ptr<cluster::NamingService> naming, std::string name,
                            std::string_view load_balancer, const ChannelOptions* options) {
  ChannelOptions effective;
  if (!CheckInit(options, &effective)) return -1;
  std::string error;
  std::unique_ptr<cluster::LoadBalancer> balancer = cluster::MakeLoadBalancer(load_balancer, &error);
  if (!balancer) {
    last_error_ = error;
    return -1;
  }
  auto core = std::make_shared<client::ChannelCore>(effective, std::move(name));
  if (!core->InitTls({}, &last_error_)) {
    core->Shutdown();
    return -1;
  }
  if (!core->InitCluster(
          std::make_unique<client::ServerPool>(core.get(), std::move(naming), std::move(balancer)),
          &error)) {
    core->Shutdown();
    last_error_ = error;
    return -1;
  }
  core_ = std::move(core);
  last_error_.clear();
  return 0;
}

int Channel::Init(const char* server_address, int port, const ChannelOptions* options) {
  if (server_address == nullptr) {
    last_error_ = "invalid server address: nullptr";
    return -1;
  }
  std::string host = server_address;
  if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
  return Init(host + ":" + std::to_string(port), options);
}

int Channel::Init(const char* server_address, const char* load_balancer,
                  const ChannelOptions* options) {
  if (server_address == nullptr) {
    last_error_ = "invalid server address: nullptr";
    return -1;
  }
  const std::string_view address(server_address);
  const bool is_url = address.find("://") != std::string_view::npos;
  if (load_balancer == nullptr || *load_balancer == '\0') {
    if (is_url) {
      last_error_ = "naming service URL \"" + std::string(address) +
                    "\" needs a load balancer (rr, random, wrr, c_murmurhash or la)";
      return -1;
    }
    return Init(address, options);
  }
  if (!is_url) {
    last_error_ = "load balancer \"" + std::string(load_balancer) + "\" needs a naming service URL " +
                  "(list://, file://, dns:// or etcd://), not \"" + std::string(address) + "\"";
    return -1;
  }
  return InitCluster(address, load_balancer, options);
}

const std::string& Channel::remote_side() const noexcept {
  static const std::string kEmpty;
  return core_ ? core_->remote_side() : kEmpty;
}

std::vector<ServerInfo> Channel::servers() const {
  return core_ ? core_->Servers() : std::vector<ServerInfo>{};
}

ChannelStats Channel::stats() const noexcept {
  return core_ ? core_->counters().Snapshot() : ChannelStats{};
}

void Channel::CallMethod(const google::protobuf::MethodDescriptor* method,
                         google::protobuf::RpcController* rpc_controller,
                         const google::protobuf::Message* request,
                         google::protobuf::Message* response, google::protobuf::Closure* done) {
  auto* controller = dynamic_cast<Controller*>(rpc_controller);
  if (controller == nullptr) {
    if (rpc_controller != nullptr) {
      rpc_controller->SetFailed("[E22]arenarpc::Channel needs an arenarpc::Controller");
    }
    FailBeforeStart(core_.get(), nullptr, EINVAL, "", done);
    return;
  }
  if (!core_) {
    FailBeforeStart(nullptr, controller, EINVAL, "Channel is not initialized", done);
    return;
  }
  core_->counters().calls.fetch_add(1, std::memory_order_relaxed);
  if (method == nullptr || request == nullptr || response == nullptr) {
    core_->counters().failed_calls.fetch_add(1, std::memory_order_relaxed);
    FailBeforeStart(core_.get(), controller, EINVAL, "method, request and response are required",
                    done);
    return;
  }
  if (done == nullptr && core_->loops().InLoopThread() && !fiber::InFiber()) {
    // The loop this thread would block is the one that has to complete the call (a fiber
    // would only suspend, leaving the thread to its loop).
    core_->counters().failed_calls.fetch_add(1, std::memory_order_relaxed);
    FailBeforeStart(core_.get(), controller, EINVAL,
                    "synchronous call from one of the channel's own I/O threads would "
                    "deadlock; call asynchronously (pass a done closure), or keep "
                    "ChannelOptions::callback_threads > 0 so that done runs off the I/O threads",
                    nullptr);
    return;
  }
  std::string credential;
  const bool intercepted = !core_->options().interceptors.empty();
  if (intercepted) {
    std::string error_text;
    const int code = internal::RunBeforeSend(core_->options().interceptors,
                                             InterceptedClientCall{*method, *controller, *request},
                                             &credential, &error_text);
    if (done != nullptr) {
      done = std::make_unique<AfterReceiveDone>(core_, *method, *controller, *response, done)
                 .release();  // deletes itself when run
    }
    if (code != 0) {
      core_->counters().failed_calls.fetch_add(1, std::memory_order_relaxed);
      FailBeforeStart(core_.get(), controller, code, error_text, done);
      if (done == nullptr) {
        internal::RunAfterReceive(core_->options().interceptors, *method, *controller, *response);
      }
      return;
    }
  }
  auto call = std::make_shared<client::ClientCall>(core_, method, controller, response, done);
  if (call->Prepare(*request, std::move(credential))) {
    call->Start();
    if (done == nullptr) call->Wait();
  } else {
    core_->counters().failed_calls.fetch_add(1, std::memory_order_relaxed);
    FailBeforeStart(core_.get(), nullptr, 0, "", done);
  }
  if (intercepted && done == nullptr) {
    internal::RunAfterReceive(core_->options().interceptors, *method, *controller, *response);
  }
}

}  // namespace arenarpc
