#pragma once
// Channel: the client end of baidu_std (spec §6, §7), or of gRPC (ChannelOptions::protocol).
// A google::protobuf::RpcChannel, so stubs generated with `option cc_generic_services = true` work
// unchanged:
//
//   arenarpc::Channel channel;
//   arenarpc::ChannelOptions options;            // timeout 500 ms, connect 200 ms, 3 retries
//   if (channel.Init("localhost:8000", &options) != 0) { ...channel.last_error()... }
//   example::EchoService_Stub stub(&channel);
//   arenarpc::Controller cntl;
//   stub.Echo(&cntl, &request, &response, nullptr);   // done == nullptr: waits until done
//   (a plain thread blocks; a server handler — on a fiber — suspends, freeing its thread)
//   if (cntl.Failed()) { ...cntl.ErrorCode(), cntl.ErrorText()... }
//
// Asynchronous calls pass a done closure (e.g. arenarpc::NewCallback(...)): it runs once, on one
// of the channel's callback threads (ChannelOptions::callback_threads; there a synchronous call
// works, as inside a brpc done), and request/response/controller must stay alive until it ran.
// arenarpc::Join(cntl.call_id()) waits for it; arenarpc::StartCancel(id) cancels the call.
// Requests and responses may live on the caller's protobuf Arena; the reply is parsed straight
// into the caller's response.
//
// Guarantees: a call completes exactly once. After it completed (with success, an error or a
// timeout), the runtime never touches its request, response, controller or done again; a reply
// that arrives later is dropped and counted (stats().dropped_responses). A call is retried (new
// correlation id, new connection if needed) only when its request was not completely written:
// connect failures and connections that broke before the write finished. A call whose request was
// sent is never resent (at-most-once), and a timed-out call is never retried.
//
// Thread-safe: any number of threads may call CallMethod at once. Do not destroy a Channel while
// calls on it are in flight from other threads, nor from inside one of its done callbacks; the
// destructor fails the calls still pending (EFAILEDSOCKET) and joins the runtime threads.

#include <google/protobuf/service.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "arenarpc/authenticator.h"
#include "arenarpc/cluster/retry_policy.h"
#include "arenarpc/controller.h"
#include "arenarpc/deprecated_option.h"
#include "arenarpc/interceptor.h"
#include "arenarpc/named_enum.h"
#include "arenarpc/tls_version.h"

namespace arenarpc {

namespace client {
class ChannelCore;
}
namespace cluster {
class NamingService;
}
class PartitionChannel;

// TLS to the servers (docs/tls.md).
struct ChannelTlsOptions {
  bool enable = false;
  // PEM CA bundle that verifies the servers' certificates; empty = the system's trust store.
  std::string ca_file;
  // Name sent as SNI and checked against the server certificate. Empty: the host of Init's
  // "host:port" when it is a name, else each server's IP (checked against IP subjectAltNames).
  std::string sni_host;
  // false: neither the chain nor the name is checked (encryption without authentication).
  bool verify = true;
  // Client certificate and key (PEM) for servers that require mTLS; empty = none.
  std::string cert_file;
  std::string key_file;
  TlsVersion min_version = TlsVersion::kTls12;
  std::string ciphers;       // TLS 1.2 cipher list, OpenSSL syntax; empty = OpenSSL's default
  std::string ciphersuites;  // TLS 1.3 suites; empty = OpenSSL's default
};

// ChannelOptions::connection_type.
enum class ConnectionType {
  kSingle,  // one connection shared by all calls, any number in flight, matched by correlation id
  kPooled,  // at most one call per connection; idle connections wait in a pool
  kShort,   // one connection per call
};
template <>
struct EnumNames<ConnectionType> {
  static constexpr std::pair<std::string_view, ConnectionType> kNames[] = {
      {"single", ConnectionType::kSingle},
      {"pooled", ConnectionType::kPooled},
      {"short", ConnectionType::kShort}};
};

// ChannelOptions::protocol.
enum class ChannelProtocol {
  kBaiduStd,  // "baidu_std" (or empty)
  kGrpc,      // "grpc", or brpc's "h2:grpc"
};
template <>
struct EnumNames<ChannelProtocol> {
  static constexpr std::pair<std::string_view, ChannelProtocol> kNames[] = {
      {"baidu_std", ChannelProtocol::kBaiduStd},
      {"", ChannelProtocol::kBaiduStd},
      {"grpc", ChannelProtocol::kGrpc},
      {"h2:grpc", ChannelProtocol::kGrpc}};
};

ARENARPC_DEPRECATED_FIELDS_BEGIN

// Durations are std::chrono durations, but for brpc's own fields (timeout_ms, connect_timeout_ms,
// backup_request_ms: int64_t milliseconds).
struct ChannelOptions {
  // Deadline of the whole call including retries; -1 = none. A Controller may override it.
  int64_t timeout_ms = 500;
  // Deadline of one TCP connect; -1 = none (the call's deadline still applies).
  int64_t connect_timeout_ms = 200;
  // Extra attempts after a connection failure that happened before the request was sent.
  int max_retry = 3;
  // ConnectionType::kSingle ("single"), kPooled ("pooled") or kShort ("short"): above. brpc's
  // string spellings can be assigned.
  NamedEnum<ConnectionType> connection_type = ConnectionType::kSingle;
  // Largest reply body accepted (spec §1.1); a larger one closes the connection.
  size_t max_body_size = 64u << 20;
  // Runtime threads: they do the I/O.
  int io_threads = 1;
  // Threads (of this channel) that run the done closures of asynchronous calls, so that a done
  // may make a synchronous call or block, as in brpc (where done runs in a bthread).
  // 0 = run done on the I/O thread that completed the call: one thread hop less per call, but a
  // synchronous call from inside done then fails (EINVAL) and a slow done stalls that thread's I/O.
  int callback_threads = 1;
  // "pooled": idle connections kept per channel; more are closed after their call.
  int max_pooled_connections = 100;
  // Send the remaining budget in RpcRequestMeta.timeout_ms (brpc's
  // -baidu_std_protocol_deliver_timeout_ms flag; off by default there too).
  bool deliver_timeout = false;
  // ChannelProtocol::kBaiduStd ("baidu_std", or empty), or kGrpc ("grpc" / brpc's "h2:grpc"):
  // unary calls as gRPC over HTTP/2, many at once on one connection, and streaming calls through
  // GrpcClientStream (arenarpc/grpc_client_stream.h; docs/grpc.md).
  NamedEnum<ChannelProtocol> protocol = ChannelProtocol::kBaiduStd;
  // --- protocol "grpc" only. A connection holds at most max_body_size (response budget) +
  // max_body_size (the oldest response) + min(grpc_max_concurrent_streams x grpc_stream_window,
  // grpc_connection_window) + streams x grpc_max_header_list_bytes of responses (docs/grpc.md).
  // Streams open at once on one connection (the server's SETTINGS_MAX_CONCURRENT_STREAMS caps it
  // further); more calls wait for a stream in order, their bytes counted in max_unwritten_bytes.
  uint32_t grpc_max_concurrent_streams = 100;
  // A response header list (headers, and trailers) larger than this fails the call (ERESPONSE).
  size_t grpc_max_header_list_bytes = 64u << 10;
  // Flow-control window of each stream (SETTINGS_INITIAL_WINDOW_SIZE). 1..2^31-1.
  uint32_t grpc_stream_window = 1u << 20;
  // Flow-control window of the connection (all streams' responses in flight together), given
  // back as calls consume their responses (at once while the connection holds less than
  // max_body_size): streams whose readers stall hold at most this beyond the budget together, and
  // past it the connection's other calls wait too (docs/grpc.md "Flow control"). 65535..2^31-1.
  uint32_t grpc_connection_window = 16u << 20;
  // Largest frame payload accepted from the server (SETTINGS_MAX_FRAME_SIZE). 16384..16777215.
  uint32_t grpc_max_frame_size = 16384;
  // BDP-based window growth (as ServerOptions::http2_max_window): both windows grow toward twice
  // the bytes one round trip carries, up to this; it then replaces grpc_connection_window in the
  // connection's bound. 0 = off. 0, or 65535..2^31-1.
  uint32_t grpc_max_window = 0;
  // Bytes of requests queued on one connection and not yet accepted by the kernel; a call that
  // would queue more fails with EOVERCROWDED (brpc's socket_max_unwritten_bytes). One request
  // larger than this still goes when nothing else waits.
  size_t max_unwritten_bytes = 64u << 20;
  // A reply frame that started arriving must be complete within this long, and queued requests
  // must see the kernel accept some of their bytes within this long; else the connection is
  // closed as stuck (its calls fail, unsent ones retry) and replaced. Negative = never.
  std::chrono::milliseconds read_timeout{10000};
  std::chrono::milliseconds write_timeout{10000};
  // A connection on which this many calls in a row timed out with no reply read in between is
  // closed as stuck and replaced (calls that time out together count once). 0 = never.
  int max_consecutive_timeouts = 3;
  // A compressed reply inflating to more than this fails (EREQUEST) without inflating further.
  size_t max_decompressed_size = 64u << 20;

  // --- cluster channels: Init(naming_url, load_balancer, &options); see docs/cluster.md
  // A call without a reply after this long sends a copy to another server; the first reply wins,
  // the other attempt is abandoned and its reply dropped. -1 = off (brpc's backup_request_ms).
  int64_t backup_request_ms = -1;
  // A server whose connect failed, whose connection broke or was closed as stuck is probed this
  // often until the probe succeeds; meanwhile calls avoid it. Once back, it gets new connections.
  // 1 ms .. 1 h.
  std::chrono::milliseconds health_check_interval{3000};
  // brpc's health_check_path: empty = a probe succeeds when a TCP connect does; "/health" (any
  // path) = the probe also sends `GET <path> HTTP/1.1` and needs a 200 reply within
  // health_check_timeout, so a server that accepts but does not answer stays out.
  std::string health_check_path;
  std::chrono::milliseconds health_check_timeout{500};  // 1 ms .. 1 h
  // dns:// re-resolves this often; file:// checks its file this often (at most every 500 ms).
  // 1 ms .. 1 h.
  std::chrono::milliseconds naming_refresh_interval{5000};
  // Which failed attempts are retried; nullptr = DefaultDoRetry. Not owned.
  const RetryPolicy* retry_policy = nullptr;
  // brpc's enable_circuit_breaker: a server at least half of whose last 20 attempts failed
  // (error replies, timeouts, broken connections) leaves rotation and is probed like a server
  // whose connection broke (back after health_check_interval if it accepts connections).
  bool enable_circuit_breaker = false;

  // --- TLS: every connection (and health probe) of the channel runs TLS when tls.enable.
  ChannelTlsOptions tls;
  // Puts GenerateCredential()'s credential on every request (RpcMeta.authentication_data;
  // docs/auth.md). nullptr = none. Not owned; must outlive the channel.
  const Authenticator* auth = nullptr;
  // Run in this order before each call is sent (BeforeSend), and in reverse once it completed
  // (AfterReceive); docs/interceptors.md.
  std::vector<std::shared_ptr<const ClientInterceptor>> interceptors;

  // --- deprecated spellings, for one release (arenarpc/deprecated_option.h): each one set wins
  // over the duration that replaced it (integer milliseconds).
  [[deprecated("use read_timeout")]] int64_t read_timeout_ms = kUnsetOption<int64_t>;
  [[deprecated("use write_timeout")]] int64_t write_timeout_ms = kUnsetOption<int64_t>;
  [[deprecated("use health_check_interval")]] int64_t health_check_interval_ms =
      kUnsetOption<int64_t>;
  [[deprecated("use health_check_timeout")]] int64_t health_check_timeout_ms =
      kUnsetOption<int64_t>;
  [[deprecated("use naming_refresh_interval")]] int64_t naming_refresh_interval_ms =
      kUnsetOption<int64_t>;
};

ARENARPC_DEPRECATED_FIELDS_END

// One server of a channel, as Channel::servers() reports it.
struct ServerInfo {
  std::string address;     // "ip:port"
  int weight = 1;
  std::string tag;
  bool healthy = true;     // in rotation (false while being probed)
  uint64_t attempts = 0;   // attempts sent to it (retries and backup requests included)
};

// Counters of one channel (monotonic, approximately consistent).
struct ChannelStats {
  uint64_t calls = 0;               // CallMethod invocations
  uint64_t failed_calls = 0;        // completed with an error (timeouts included)
  uint64_t timeouts = 0;            // completed with ERPCTIMEDOUT
  uint64_t retries = 0;             // extra attempts made
  uint64_t dropped_responses = 0;   // replies for unknown / finished / timed-out calls
  uint64_t connections_opened = 0; // successful TCP connects
  uint64_t connections_failed = 0; // connects that failed
  uint64_t backup_requests = 0;    // backup copies sent (cluster channels)
  uint64_t servers_isolated = 0;   // servers taken out of rotation after a connection failure
  uint64_t servers_revived = 0;    // ... and put back after a successful probe
  uint64_t circuit_breaker_trips = 0;  // servers isolated by the circuit breaker
  uint64_t stuck_connections = 0;  // connections closed as stuck (read/write_timeout,
                                   // max_consecutive_timeouts)
};

class Channel : public google::protobuf::RpcChannel {
 public:
  Channel();
  ~Channel() override;
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // server_address: "host:port", "ip:port" or "[ipv6]:port"; the host is resolved once, here.
  // options == nullptr: defaults. Returns 0, or -1 with last_error() saying why.
  int Init(std::string_view server_address, const ChannelOptions* options);
  // brpc's shapes. Init(host, port, options) == Init("host:port", options). load_balancer:
  // nullptr or "" = server_address is one server. Otherwise (a cluster channel, docs/cluster.md)
  // server_address is a naming-service URL — "list://host:port[ weight],...", "file://path",
  // "dns://host:port", "etcd://host:port[,host:port]/prefix" — and load_balancer one of "rr",
  // "random", "wrr", "c_murmurhash", "la". The naming service's first list is fetched here.
  // A call finding no server in rotation fails with EHOSTDOWN.
  int Init(const char* server_address, int port, const ChannelOptions* options);
  int Init(const char* server_address, const char* load_balancer, const ChannelOptions* options);
  const std::string& last_error() const noexcept { return last_error_; }

  // controller must be an arenarpc::Controller. done == nullptr: synchronous.
  void CallMethod(const google::protobuf::MethodDescriptor* method,
                  google::protobuf::RpcController* controller,
                  const google::protobuf::Message* request, google::protobuf::Message* response,
                  google::protobuf::Closure* done) override;

  ChannelStats stats() const noexcept;
  // Replies dropped because no pending call matched them (late after a timeout, duplicate, unknown).
  uint64_t dropped_responses() const noexcept { return stats().dropped_responses; }
  // "ip:port" the channel resolved to, or a cluster channel's naming URL (empty before Init).
  const std::string& remote_side() const noexcept;
  // The servers of the channel now (a cluster's current list, sorted by address).
  std::vector<ServerInfo> servers() const;

 private:
  // Not initialized yet and valid options (defaults for nullptr) -> *effective; else last_error_.
  bool CheckInit(const ChannelOptions* options, ChannelOptions* effective);
  int InitCluster(std::string_view naming_url, std::string_view load_balancer,
                  const ChannelOptions* options);
  // A cluster channel over a naming service built elsewhere (a PartitionChannel's partition);
  // `name` is what remote_side() reports.
  int InitWithNaming(std::unique_ptr<cluster::NamingService> naming, std::string name,
                     std::string_view load_balancer, const ChannelOptions* options);
  friend class PartitionChannel;
  friend class GrpcClientStream;

  std::shared_ptr<client::ChannelCore> core_;
  std::string last_error_;
};

}  // namespace arenarpc
