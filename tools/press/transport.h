#pragma once
// Transport: how arenarpc_press sends one call (the echo workload's or a user's method) over some
// protocol. Implementations register
// themselves by protocol name (ARENARPC_PRESS_REGISTER_TRANSPORT in their own .cc file, which
// tools/press/CMakeLists.txt globs), so main() needs no #ifdef per protocol.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include "press/press_request.h"

namespace arenarpc::press {

struct TransportOptions {
  std::string server;                       // "host:port", or a naming URL with load_balancer
  std::string load_balancer;                // "" = one server
  std::string connection_type = "single";   // "single" | "pooled" | "short" (protocol-specific)
  int64_t timeout_ms = 1000;                // per call
  bool deliver_timeout = false;             // baidu_std: send it (RpcRequestMeta.timeout_ms)
  int connections = 1;                      // independent connections/channels, used round-robin
  int io_threads = 1;                       // threads that run completion callbacks
  bool tls = false;                         // baidu_std: TLS to the server (docs/tls.md)
  std::string tls_ca_file;                  // empty = the system trust store
  std::string tls_sni_host;                 // empty = the host of `server`
  // The method called; nullptr = the echo workload, sent to echo_method.
  const google::protobuf::MethodDescriptor* method = nullptr;
  // The echo workload's method (arenarpc.example.EchoService.Echo, or the OptionalEchoService's:
  // the same bytes either way); nullptr = EchoService.Echo.
  const google::protobuf::MethodDescriptor* echo_method = nullptr;
  // --check_response: parse each response into this type (the method's output type) and hand it
  // to the check as CallResult::response_message; nullptr = responses are not parsed.
  const google::protobuf::Message* response_prototype = nullptr;
  // --grpc_path: the echo workload's gRPC method path ("" = gRPC's own echo server's,
  // kGrpcEchoMethod; "/arenarpc.example.EchoService/Echo" reaches an arenarpc echo_server).
  std::string grpc_path;
};

// What a call returned. Views are valid only during the callback.
struct CallResult {
  int error_code = 0;                 // 0 = success; baidu_std codes (error_codes.h) or errno
  std::string_view error_text;
  std::string_view response_payload;  // echo: serialized ComplexPayload of the response (on success)
  // --method with TransportOptions::response_prototype, binary protocols: the parsed response.
  const google::protobuf::Message* response_message = nullptr;
  bool json_body = false;             // HTTP+JSON: response_json holds the response body
  std::string_view response_json;
};

using DoneCallback = std::function<void(const CallResult&)>;

class Transport {
 public:
  virtual ~Transport() = default;
  // Connects/prepares. Returns false and fills *error on failure.
  virtual bool Init(const TransportOptions& options, std::string* error) = 0;
  // Starts one call and returns without waiting. `request` stays valid until `done` has run;
  // `done` runs exactly once, on any thread (possibly inline when the call fails immediately).
  // Latency is timed by the caller (from the call's scheduled time), not by the transport.
  virtual void Send(const PressRequest& request, DoneCallback done) = 0;
  // Blocks until every call started has completed (their callbacks have returned).
  virtual void Drain() = 0;
  // Attempts sent to each server ("ip:port"), for transports that spread calls over a cluster.
  virtual std::map<std::string, uint64_t> ServerAttempts() const { return {}; }
};

// The method an echo-workload call goes to (transport_registry.cc).
const google::protobuf::MethodDescriptor* EchoMethod(const TransportOptions& options);

using TransportFactory = std::function<std::unique_ptr<Transport>()>;

// Registry by protocol name ("baidu_std", "grpc", ...). Registration is meant for static
// initializers; lookups are thread-safe.
bool RegisterTransport(std::string name, TransportFactory factory);
std::unique_ptr<Transport> MakeTransport(std::string_view name);  // nullptr if unknown
std::vector<std::string> TransportNames();                        // sorted

}  // namespace arenarpc::press

#define ARENARPC_PRESS_CONCAT_INNER(a, b) a##b
#define ARENARPC_PRESS_CONCAT(a, b) ARENARPC_PRESS_CONCAT_INNER(a, b)
// In a transport's .cc file:  ARENARPC_PRESS_REGISTER_TRANSPORT("grpc", GrpcTransport);
#define ARENARPC_PRESS_REGISTER_TRANSPORT(name, Type)                                   \
  static const bool ARENARPC_PRESS_CONCAT(press_transport_registered_, __LINE__) =     \
      ::arenarpc::press::RegisterTransport(name, [] { return std::make_unique<Type>(); })
