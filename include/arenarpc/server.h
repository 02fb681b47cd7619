#pragma once
// arenarpc::Server: serves google::protobuf::Service implementations (generated with
// `option cc_generic_services = true`) over brpc's baidu_std protocol, creating every call's
// request and response through a MessageMemory strategy (heap | arena | paged | reuse).
//
//   arenarpc::Server server;
//   server.AddService(&echo_impl, arenarpc::SERVER_DOESNT_OWN_SERVICE);
//   arenarpc::ServerOptions options;
//   options.memory_mode = "paged";
//   if (server.Start("0.0.0.0:8000", options) != 0) die(server.last_error());
//   server.RunUntilAskedToQuit();
//
// Handlers have brpc's shape: void Echo(RpcController* cntl, const Req* request, Resp* response,
// Closure* done), and run on fibers (arenarpc/fiber.h): a synchronous call to a backend suspends
// the handler, not its thread. `cntl` is an arenarpc::Controller. done->Run() may be called on any thread, now
// or later; it sends the reply. Before calling it, a handler may take
// static_cast<Controller*>(cntl)->RetainMessages() to keep request/response alive for background
// work after the reply was sent (two-phase completion); they return to their strategy when the
// last handle is dropped.

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "arenarpc/authenticator.h"
#include "arenarpc/capture_options.h"
#include "arenarpc/controller.h"
#include "arenarpc/deprecated_option.h"
#include "arenarpc/interceptor.h"
#include "arenarpc/live_settings.h"
#include "arenarpc/max_concurrency.h"
#include "arenarpc/memory/message_memory.h"
#include "arenarpc/method_stats.h"
#include "arenarpc/tls_version.h"

namespace google::protobuf {
class Service;
}

namespace arenarpc::internal {
struct ServerAccess;  // src/server/server_access.h
}

namespace arenarpc {

enum ServiceOwnership { SERVER_OWNS_SERVICE, SERVER_DOESNT_OWN_SERVICE };

ARENARPC_DEPRECATED_FIELDS_BEGIN

// TLS on the server's port(s), next to clear text (docs/tls.md). The server tells a TLS
// ClientHello from baidu_std and HTTP by its first bytes and serves both protocols inside TLS.
struct ServerTlsOptions {
  // PEM certificate chain and private key; both empty = no TLS (a ClientHello is refused).
  std::string cert_file;
  std::string key_file;
  // Refuse clear-text connections: only TLS is served on the port(s).
  bool require_tls = false;
  // mTLS: non-empty = clients must present a certificate that verifies against this PEM CA
  // bundle; the handler sees it in Controller::tls_peer(). Empty = client certificates not asked.
  std::string client_ca_file;
  TlsVersion min_version = TlsVersion::kTls12;
  std::string ciphers;       // TLS 1.2 cipher list, OpenSSL syntax; empty = OpenSSL's default
  std::string ciphersuites;  // TLS 1.3 suites, e.g. "TLS_AES_128_GCM_SHA256"; empty = default
  // > 0: a new handshake checks the files' modification times at most this often and reloads
  // them when they changed (Server::ReloadTlsCertificates() does it at once). Connections already
  // open keep the certificate they started with. 0 = only ReloadTlsCertificates() reloads.
  std::chrono::milliseconds reload_check_interval{0};

  // Deprecated spelling, for one release (arenarpc/deprecated_option.h): wins when set.
  [[deprecated("use reload_check_interval")]] int reload_check_interval_ms =
      kUnsetOption<int>;
};

// Which built-in pages the main port serves (ServerOptions::main_port_pages).
enum class MainPortPages { kAll, kHealth, kNone };

struct ServerOptions {
  // Threads that read connections and run handlers (all of them serve every connection; see
  // docs/server.md, "Execution"); 0 = one per CPU.
  int num_threads = 0;
  int worker_threads = 0;              // >0: handlers run on a separate pool of this size
  // MemoryMode::kAuto | kHeap | kArena | kPaged | kReuse, or its name: "auto", "heap", ...
  // (docs/memory.md); Start() names an unknown name.
  NamedEnum<memory::MemoryMode> memory_mode = memory::MemoryMode::kAuto;
  memory::MemoryOptions memory;        // arena block sizes, page size/cache capacity, reuse caps
  // "pkg.Service.Method" -> mode override (enum or name, as memory_mode)
  std::map<std::string, NamedEnum<memory::MemoryMode>> method_memory_mode;
  // Strategy objects (your own MessageMemory, or one shared with other servers) instead of names:
  // memory_strategy, when set, replaces memory_mode; method_memory_strategy overrides a method
  // (a method may not appear in both method_* maps).
  std::shared_ptr<memory::MessageMemory> memory_strategy;
  std::map<std::string, std::shared_ptr<memory::MessageMemory>> method_memory_strategy;
  // The ARENARPC_MEMORY_MODE environment variable, when set at Start(), replaces all four above:
  // every method gets that mode (docs/memory.md; bench/memlab runs a server once per mode so).
  size_t max_body_size = 64u << 20;    // larger frames close the connection; also caps what a
                                       // compressed request may inflate to

  // --- overload
  // Calls admitted at once, from the moment a request is decoded until its reply is queued:
  // a number (0 = unlimited) or "auto" (adaptive). Calls past it get ELIMIT at once.
  MaxConcurrency max_concurrency = 0;
  // Admitted calls waiting for a thread, all connections; past it new calls get ELIMIT.
  // 0 = unlimited.
  int max_queued_requests = 1024;
  // ... of one connection; past it the server stops reading that connection until half of them
  // have started (a pipelining client cannot fill the server's queue on its own).
  int max_queued_requests_per_connection = 256;
  // Open connections; a connection accepted past it is closed at once. 0 = unlimited.
  int max_connections = 4096;

  // --- per-connection memory
  // Memory held by a connection's unsent replies (whole I/O pages). Past it the server stops
  // reading that connection until half has drained; requests already read get EOVERCROWDED.
  size_t max_unwritten_bytes = 64u << 20;
  // Request bytes of one connection's calls that have not started yet. Past it the server stops
  // reading that connection until half have started.
  size_t max_queued_request_bytes = 64u << 20;
  // Streams (docs/streaming.md) one connection may hold at once (StreamAccept fails past it), and
  // received stream bytes that their handlers have not consumed yet, summed over the connection
  // (the stream whose data would pass it is reset).
  int max_streams_per_connection = 1024;
  size_t max_stream_unconsumed_bytes = 64u << 20;
  // HTTP/2 (gRPC) flow control (docs/server.md, "HTTP/2 (gRPC) connections"). Each stream may
  // have this many request bytes in flight (SETTINGS_INITIAL_WINDOW_SIZE; a default-sized 4 MiB
  // gRPC message fits without waiting for a WINDOW_UPDATE). 1..2^31-1.
  uint32_t http2_stream_window = 4u << 20;
  // ... and all streams of a connection together: what a client can make the server hold beyond
  // max_queued_request_bytes + max_body_size, however many streams it opens. Windows are given
  // back as calls take their requests and messages, or while the connection holds less than
  // max_queued_request_bytes. 65535..2^31-1.
  uint32_t http2_connection_window = 16u << 20;
  // Largest frame payload the server accepts (SETTINGS_MAX_FRAME_SIZE). 16384..16777215.
  uint32_t http2_max_frame_size = 16384;
  // BDP-based window growth, as gRPC core's: while a transfer fills the windows, the server
  // measures the bytes one round trip carries (a PING with the data) and grows both windows
  // toward twice that, up to this many bytes; they never shrink. It then replaces
  // http2_connection_window in the connection's memory bound (docs/server.md). 0 = off (the
  // windows stay as set: the defaults already cover a 10 Gbit/s link with a 3 ms round trip).
  // 0, or 65535..2^31-1.
  uint32_t http2_max_window = 0;
  // (The header list bound, SETTINGS_MAX_HEADER_LIST_SIZE, is max_http_header_size.)

  // --- message memory (docs/server.md, "Message memory")
  // What one request may hold once parsed, estimated from a scan of its bytes before parsing;
  // past it the call gets EREQUEST (HTTP 413). 0 = no bound.
  size_t max_request_memory = 256u << 20;
  // What the messages of all calls in flight may hold together (each call charged its estimate,
  // learned per method); a call that would pass it gets ELIMIT at once. 0 = no bound.
  size_t max_inflight_message_memory = 1u << 30;

  // --- timeouts: std::chrono durations (a negative one = never), but brpc's idle_timeout_sec
  int idle_timeout_sec = -1;           // close connections idle this long; -1 = never
  // A frame must arrive completely within this long of its first byte, or the connection is
  // closed (slow senders).
  std::chrono::milliseconds read_timeout{30000};
  // A connection that sends no byte this long after it was accepted is closed.
  std::chrono::milliseconds first_byte_timeout{10000};
  // A connection whose unsent replies find no room in its socket this long (the client does not
  // read) is closed.
  std::chrono::milliseconds write_timeout{30000};
  // A gRPC streaming handler waiting in Read() for a client message this long gets false and
  // its call fails DEADLINE_EXCEEDED (the client's stream idle): its fiber and its
  // max_streaming_calls_per_connection slot are free again. 5 minutes, as Envoy's
  // stream_idle_timeout.
  std::chrono::milliseconds stream_idle_timeout{std::chrono::minutes(5)};
  // Stop(): how long calls in flight and unsent replies get. >= 0.
  std::chrono::milliseconds stop_deadline{5000};

  // --- fibers (docs/server.md, "Execution"): every handler runs on a fiber
  // Fibers alive at once (handlers running or waiting, and fibers they started); a call that
  // would need one more gets ELIMIT. >= 1.
  int max_fibers = 4096;
  // Shares of max_fibers (a call past one gets ELIMIT, gRPC RESOURCE_EXHAUSTED, naming it):
  // fibers the handlers of one connection hold at once; 0 = no share of its own (brpc clients
  // send all their calls on one connection by default). 0..max_fibers.
  int max_fibers_per_connection = 0;
  // Fibers held by gRPC streaming handlers (each holds its fiber until its stream ends), all
  // connections together; 0 = max_fibers / 2. The rest stays for unary calls. 0..max_fibers.
  int max_streaming_fibers = 0;
  // ... of one connection (gRPC core's default MAX_CONCURRENT_STREAMS). >= 1.
  int max_streaming_calls_per_connection = 100;
  // Stack of each fiber (rounded up to pages; a guard page below it is extra). >= 16 KiB.
  size_t fiber_stack_size = 256u << 10;

  // --- HTTP on the same port (docs/http.md)
  // Request line + headers of one HTTP request; larger ones get 431 and the connection closes.
  // 1..81920 (the HTTP parser's own bound). Bodies are bounded by max_body_size.
  size_t max_http_header_size = 64u << 10;
  // Built-in HTTP services (/health, /version, /status, ...). false: every such path is 404.
  bool has_builtin_services = true;
  // >= 0: built-in services are served only on this second port (0 = pick one, see
  // internal_listen_port()), and the main port answers them 403; methods stay on the main port.
  // -1: none.
  int internal_port = -1;
  // The IP internal_port listens on ("0.0.0.0" / "::" to reach the pages from other hosts).
  std::string internal_address = "127.0.0.1";

  // --- browsers (docs/http.md, "Browsers: grpc-web and Connect"): grpc-web and Connect calls
  // are always served; these let pages from other origins make them (CORS).
  // Origins whose pages may call the methods: exact ("https://app.example.com") or "*" (any).
  // A method's reply to a request from one of them carries Access-Control-Allow-Origin and
  // exposes grpc-status, grpc-message, ...; a preflight OPTIONS is answered 204 (403 for another
  // origin). Empty = no CORS: browsers refuse cross-origin calls.
  std::vector<std::string> cors_allowed_origins;
  // Request headers such pages may send beyond the built-in list (Content-Type, Authorization,
  // grpc-web's and Connect's own headers, traceparent); e.g. your metadata's names.
  std::vector<std::string> cors_allowed_headers;
  // How long a browser may keep a preflight's answer (Access-Control-Max-Age; whole seconds).
  std::chrono::seconds cors_max_age{7200};
  // --- registration in a registry (docs/cluster.md); needs the arenarpc::etcd component
  // "etcd://host:port[,host:port]/prefix": Start() puts "<prefix>/<advertised_address>" on a lease
  // and keeps it alive; Stop() deletes it first. Empty = not registered.
  std::string registry_url;
  // A crashed server's key expires this long after it died (etcd leases count whole seconds:
  // rounded up).
  std::chrono::milliseconds registry_lease_ttl{10000};
  // "ip:port" clients should use; empty = the listening address, with 0.0.0.0 / :: replaced by
  // the first IPv4 address of an interface that is up and not loopback (else 127.0.0.1).
  std::string advertised_address;
  int registry_weight = 1;             // wrr weight published with the address (1..1000)
  std::string registry_tag;            // optional tag published with the address (no blanks)

  // --- TLS (docs/tls.md)
  ServerTlsOptions tls;

  // --- built-in pages on the main port (docs/server.md, "Built-in pages")
  // kAll: every page; kHealth: only /health (load balancers, Channel's health_check_path);
  // kNone: 404 for every page. With internal_port >= 0, kAll means the pages moved there (the
  // main port answers them 403); kHealth still answers /health on the main port.
  MainPortPages main_port_pages = MainPortPages::kAll;
  // /flags/NAME?setvalue=VALUE changes a live setting (docs/server.md, "Live settings") for
  // whoever may read the pages (internal_port, main_port_pages, auth). false: /flags only lists
  // them; Server::SetLiveSetting() still changes them.
  bool settings_from_pages = true;

  // --- authentication (docs/auth.md): verifies baidu_std's authentication_data (once per
  // connection) and HTTP's Authorization header (per request; built-in pages other than /health
  // too). nullptr = none. Not owned; must outlive the server.
  const Authenticator* auth = nullptr;

  // --- interceptors (docs/interceptors.md): run in this order on every call (baidu_std, HTTP,
  // gRPC) after its request was parsed and before its handler; the first refusal answers the call.
  std::vector<std::shared_ptr<const ServerInterceptor>> interceptors;

  // --- capture (docs/capture.md): samples requests of every protocol (baidu_std, HTTP, gRPC
  // unary) into rotating dump files that arenarpc_press --replay plays. Off unless
  // capture.directory is set, here or by the ARENARPC_CAPTURE environment variable at Start().
  CaptureOptions capture;

  // --- deprecated spellings, for one release (arenarpc/deprecated_option.h): each one set wins
  // over the duration that replaced it (integer milliseconds, seconds for cors_max_age_sec).
  [[deprecated("use read_timeout")]] int read_timeout_ms = kUnsetOption<int>;
  [[deprecated("use first_byte_timeout")]] int first_byte_timeout_ms = kUnsetOption<int>;
  [[deprecated("use write_timeout")]] int write_timeout_ms = kUnsetOption<int>;
  [[deprecated("use stream_idle_timeout")]] int stream_idle_timeout_ms = kUnsetOption<int>;
  [[deprecated("use stop_deadline")]] int stop_deadline_ms = kUnsetOption<int>;
  [[deprecated("use cors_max_age")]] int cors_max_age_sec = kUnsetOption<int>;
  [[deprecated("use registry_lease_ttl")]] int registry_lease_ttl_ms = kUnsetOption<int>;
};

ARENARPC_DEPRECATED_FIELDS_END

class Server {
 public:
  Server();
  ~Server();  // Stop() + Join()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Registers every method of `service` under "pkg.Service.Method" (and the service under its
  // short name, spec §5.2). Only before Start(). 0 on success, -1 (see last_error()) on a
  // duplicate full or short service name, a null service or a running server. On failure the
  // server does not take ownership, whatever `ownership` says (as brpc).
  int AddService(google::protobuf::Service* service, ServiceOwnership ownership);

  // Validates the options, binds "ip:port" (port 0 = pick one; "[::1]:p", "host:p", "*:p" too),
  // starts the I/O threads and accepts. 0 on success, -1 with last_error() saying which option or
  // step failed and why.
  int Start(std::string_view address, const ServerOptions& options);
  // brpc's shapes; options == nullptr: defaults. Start(port, ...) listens on 0.0.0.0:port.
  int Start(int port, const ServerOptions* options);
  int Start(const char* ip_and_port, const ServerOptions* options);
  const std::string& last_error() const;   // why AddService/Start failed
  int listen_port() const;                 // after a successful Start(), else -1
  int internal_listen_port() const;        // the internal_port listening, else -1

  // Stops accepting, answers new requests with ELOGOFF (2003), lets calls in flight finish and
  // writes every reply produced, then closes every connection; all within stop_deadline (what
  // is still unfinished then is dropped). Not from a handler. Idempotent.
  int Stop();
  int Stop(int /*closewait_ms*/) { return Stop(); }  // brpc's shape; brpc ignores it too
  // Waits until Stop() has finished and every I/O and worker thread has exited. 0 on success.
  int Join();
  // Blocks until SIGINT or SIGTERM, then Stop() + Join().
  void RunUntilAskedToQuit();

  // Reloads ServerTlsOptions' certificate, key and CA files: new handshakes use them, open
  // connections keep theirs. 0 on success; -1 (last_error() says why; the old ones stay in use)
  // when a file does not load or TLS is off.
  int ReloadTlsCertificates();

  // grpc.health.v1.Health (docs/grpc.md, "Health"): the status its Check and Watch report for
  // `service` — a registered service's full name, "" for the server as a whole, or any other name
  // your clients ask for. Registered services and "" are SERVING until set otherwise; once Stop()
  // begins every one is NOT_SERVING and these calls change nothing (as gRPC's health service).
  // Before or after Start(), from any thread; Watch streams see each change.
  void SetServingStatus(std::string_view service, bool serving);
  // Every service: those set so far, the registered ones and "".
  void SetServingStatus(bool serving);

  // Live settings (arenarpc/live_settings.h, docs/server.md "Live settings"): changes one while
  // the server runs, from any thread — "max_concurrency" ("128", "auto"), "max_queued_requests",
  // "memory_mode", "method_memory_mode[pkg.Service.Method]", "memory.automatic.<field>",
  // "log_level". 0 on success (logged and kept in SettingChanges()); -1 with last_error()
  // naming the setting and the reason when the server is not running, the name is unknown, the
  // setting is fixed at Start() or the value is invalid (nothing changes then).
  int SetLiveSetting(std::string_view name, std::string_view value);
  // Every setting with its current value and whether it is live (what /flags lists); empty
  // before Start().
  std::vector<ServerSetting> ListSettings() const;
  // The latest changes, oldest first (at most kSettingHistory).
  std::vector<SettingChange> SettingChanges() const;

  // Counters of one method ("pkg.Service.Method"); full_name is empty if there is no such method.
  MethodStats GetMethodStats(std::string_view full_method_name) const;
  ServerStats GetServerStats() const;
  // Registered methods, "pkg.Service.Method", sorted (not the built-in gRPC services' methods).
  std::vector<std::string> ListMethods() const;

 private:
  friend struct internal::ServerAccess;
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace arenarpc
