#pragma once
// Everything one arenarpc_press run is configured with, and its validation (shared by the gflags
// validators in main.cc and by tests).

#include <cstdint>
#include <string>

namespace arenarpc::press {

struct PressOptions {
  std::string server = "127.0.0.1:8000";   // host:port, or a naming URL with lb (docs/cluster.md)
  std::string lb;                          // load balancer of a cluster channel; "" = one server
  std::string protocol = "baidu_std";      // a registered Transport name
  double qps = 0;                          // > 0: open loop at this rate
  int concurrency = 0;                     // > 0: closed loop with this many calls in flight
  int payload_scale = 10;                  // docs/benchmarks.md, "Workload"
  // --payload_mix "SCALE:WEIGHT,...": echo calls of several scales (payload_mix.h); replaces
  // payload_scale when given.
  std::string payload_mix;
  int ring = 64;                           // pre-generated requests; 0 = draw one per call
  double warmup_s = 2;
  double duration_s = 10;
  std::string connection_type = "single";
  int64_t timeout_ms = 1000;
  bool deliver_timeout = false;
  int connections = 1;
  int threads = 1;                         // open-loop sender threads and transport I/O threads
  int server_pid = 0;                      // > 0: sample this process's CPU and RSS
  int max_inflight = 20000;                // open loop: calls beyond are skipped (and counted)
  bool verify = true;                      // check that each response echoes its request
  uint64_t seed = 0x5eed;
  bool live = true;                        // a stderr line each second
  // A user's method instead of the echo workload (all three or none).
  std::string proto;                       // --proto: the .proto file declaring the method
  std::string proto_path;                  // --proto_path: import directories, ':'-separated
  bool replay = false;                     // --replay given: --proto alone describes its records
  std::string method;                      // --method: pkg.Service.Method
  // The echo workload's service: "EchoService", or "OptionalEchoService" (the same bytes to the
  // schema whose payload is declared `optional`).
  std::string echo_service = "EchoService";
  std::string input;                       // --input: requests in JSON (lines, object or array)
  bool check_response = false;             // --check_response: parse responses into the output type
  bool server_vars = true;                 // --server_vars: read the server's /vars over HTTP
  bool tls = false;                        // --tls: baidu_std over TLS (docs/tls.md)
  std::string tls_ca;                      // --tls_ca: PEM CA verifying the server
  std::string tls_sni;                     // --tls_sni: name checked against its certificate
};

// Per-field checks: return "" when valid, else what is wrong (used by the gflags validators).
std::string ValidateServerAddress(const std::string& host_port);
std::string ValidatePositive(const char* name, double value, bool allow_zero);

// Whole-run check (every field and their combination); "" when valid.
std::string Validate(const PressOptions& options);

}  // namespace arenarpc::press
