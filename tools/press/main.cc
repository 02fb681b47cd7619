// arenarpc_press: load generator for the echo workload (docs/benchmarks.md), baidu_std (arenarpc
// or brpc servers) and any other registered protocol. See docs/press.md.
#include <gflags/gflags.h>

#include <cstdio>
#include <iostream>

#include "press/load_driver.h"
#include "press/press_options.h"
#include "press/request_source.h"
#include "press/transport.h"

namespace {

template <typename T>
bool Report(const char* flag, const std::string& error) {
  if (!error.empty()) std::fprintf(stderr, "arenarpc_press: --%s: %s\n", flag, error.c_str());
  return error.empty();
}
bool CheckServer(const char* flag, const std::string& v) {
  return Report<void>(flag, arenarpc::press::ValidateServerAddress(v));
}
bool CheckNonNegative(const char* flag, double v) {
  return Report<void>(flag, arenarpc::press::ValidatePositive(flag, v, true));
}
bool CheckPositive(const char* flag, double v) {
  return Report<void>(flag, arenarpc::press::ValidatePositive(flag, v, false));
}
bool CheckNonNegativeInt(const char* flag, int32_t v) { return CheckNonNegative(flag, v); }
bool CheckPositiveInt(const char* flag, int32_t v) { return CheckPositive(flag, v); }
bool CheckPositiveInt64(const char* flag, int64_t v) { return CheckPositive(flag, double(v)); }
bool CheckConnectionType(const char* flag, const std::string& v) {
  return Report<void>(flag, v == "single" || v == "pooled" || v == "short"
                                ? ""
                                : "must be single, pooled or short, got '" + v + "'");
}

}  // namespace

DEFINE_string(server, "127.0.0.1:8000", "Server address, host:port; with --lb a naming URL");
DEFINE_validator(server, &CheckServer);
DEFINE_string(lb, "",
              "Load balancer (rr, random, wrr, c_murmurhash, la) over the servers of --server "
              "given as a naming URL (list://a:1,b:2, file://path, dns://host:port, "
              "etcd://host:port/prefix); the report adds each server's share");
DEFINE_string(protocol, "baidu_std", "Protocol (a registered transport: baidu_std, grpc if built)");
DEFINE_double(qps, 0, "Open loop: calls per second, each timed from its scheduled send time");
DEFINE_validator(qps, &CheckNonNegative);
DEFINE_int32(concurrency, 0, "Closed loop: calls kept in flight (maximum-throughput mode)");
DEFINE_validator(concurrency, &CheckNonNegativeInt);
DEFINE_int32(payload_scale, 10, "Workload payload_scale (10: ~136 KB, ~11,700 strings)");
DEFINE_validator(payload_scale, &CheckPositiveInt);
DEFINE_int32(ring, 64, "Pre-generate this many requests and cycle through them; 0 = draw a fresh "
             "payload for every call (costs client CPU)");
DEFINE_validator(ring, &CheckNonNegativeInt);
DEFINE_double(warmup_s, 2, "Seconds of load before measuring");
DEFINE_validator(warmup_s, &CheckNonNegative);
DEFINE_double(duration_s, 10, "Seconds measured");
DEFINE_validator(duration_s, &CheckPositive);
DEFINE_string(connection_type, "single", "single | pooled | short");
DEFINE_validator(connection_type, &CheckConnectionType);
DEFINE_int64(timeout_ms, 1000, "Per-call timeout");
DEFINE_validator(timeout_ms, &CheckPositiveInt64);
DEFINE_int32(connections, 1, "Independent connections (channels), used round-robin");
DEFINE_validator(connections, &CheckPositiveInt);
DEFINE_int32(threads, 1, "Open-loop sender threads, and the transport's I/O threads");
DEFINE_validator(threads, &CheckPositiveInt);
DEFINE_int32(server_pid, 0, "Measure this process's CPU and RSS over the measured window");
DEFINE_validator(server_pid, &CheckNonNegativeInt);
DEFINE_int32(max_inflight, 20000, "Open loop: skip (and count) calls beyond this many pending");
DEFINE_validator(max_inflight, &CheckPositiveInt);
DEFINE_bool(verify, true, "Check that every response echoes its request's payload");
DEFINE_uint64(seed, 0x5eed, "Payload generator seed");
DEFINE_bool(json, false, "Print the final report as JSON on stdout (live lines stay on stderr)");
DEFINE_bool(live, true, "Print a progress line on stderr each second");

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "load generator for the echo workload\n"
      "  arenarpc_press --server 127.0.0.1:8000 --qps 800 --duration_s 30 --server_pid PID\n"
      "  arenarpc_press --server 127.0.0.1:8000 --concurrency 8   # maximum throughput");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (argc > 1) {
    std::fprintf(stderr, "arenarpc_press: unexpected argument '%s'\n", argv[1]);
    return 2;
  }
  arenarpc::press::PressOptions options;
  options.server = FLAGS_server;
  options.protocol = FLAGS_protocol;
  options.qps = FLAGS_qps;
  options.concurrency = FLAGS_concurrency;
  options.payload_scale = FLAGS_payload_scale;
  options.ring = FLAGS_ring;
  options.warmup_s = FLAGS_warmup_s;
  options.duration_s = FLAGS_duration_s;
  options.connection_type = FLAGS_connection_type;
  options.timeout_ms = FLAGS_timeout_ms;
  options.connections = FLAGS_connections;
  options.lb = FLAGS_lb;
  options.threads = FLAGS_threads;
  options.server_pid = FLAGS_server_pid;
  options.max_inflight = FLAGS_max_inflight;
  options.verify = FLAGS_verify;
  options.seed = FLAGS_seed;
  options.live = FLAGS_live;
  if (const std::string error = arenarpc::press::Validate(options); !error.empty()) {
    std::fprintf(stderr, "arenarpc_press: %s\n", error.c_str());
    return 2;
  }
  auto transport = arenarpc::press::MakeTransport(options.protocol);
  if (!transport) {
    std::string known;
    for (const auto& name : arenarpc::press::TransportNames()) known += " " + name;
    std::fprintf(stderr, "arenarpc_press: unknown --protocol '%s' (built-in:%s)\n",
                 options.protocol.c_str(), known.c_str());
    return 2;
  }
  arenarpc::press::TransportOptions transport_options;
  transport_options.server = options.server;
  transport_options.load_balancer = options.lb;
  transport_options.connection_type = options.connection_type;
  transport_options.timeout_ms = options.timeout_ms;
  transport_options.connections = options.connections;
  transport_options.io_threads = options.threads;
  if (std::string error; !transport->Init(transport_options, &error)) {
    std::fprintf(stderr, "arenarpc_press: %s\n", error.c_str());
    return 1;
  }
  if (options.live && options.ring > 0) {
    std::fprintf(stderr, "[press] pre-generating %d requests (payload_scale %d)...\n",
                 options.ring, options.payload_scale);
  }
  arenarpc::press::RequestSource requests(options.payload_scale, options.ring, options.seed);
  arenarpc::press::LoadDriver driver(options, *transport, requests);
  auto result = driver.Run(options.live ? &std::cerr : nullptr);
  result.server_attempts = transport->ServerAttempts();
  std::cout << (FLAGS_json ? arenarpc::press::FormatJson(result)
                           : arenarpc::press::FormatText(result))
            << std::flush;
  // Exit status: 0 if at least one call succeeded in the window, 1 if none did.
  return result.calls_ok > 0 ? 0 : 1;
}
