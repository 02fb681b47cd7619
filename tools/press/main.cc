// arenarpc_press: load generator for the echo workload (docs/benchmarks.md) or any method of a
// user's .proto (--proto --method --input), over baidu_std (arenarpc or brpc servers), HTTP+JSON
// and any other registered protocol. See docs/press.md.
#include <gflags/gflags.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <vector>

#include "echo/echo.pb.h"
#include "press/dynamic_method.h"
#include "press/json_requests.h"
#include "press/load_driver.h"
#include "press/press_options.h"
#include "press/replay_replies.h"
#include "press/replay_set.h"
#include "press/replay_transport.h"
#include "press/request_source.h"
#include "press/server_vars_probe.h"
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
DEFINE_string(protocol, "baidu_std",
              "Protocol (a registered transport: baidu_std, http, grpc_channel, grpc if built)");
DEFINE_string(grpc_path, "",
              "--protocol grpc: the echo method's path (default: grpc_echo_server's "
              "/arenarpc.example.GrpcEchoService/Echo; /arenarpc.example.EchoService/Echo "
              "presses an arenarpc echo_server's port over gRPC)");
DEFINE_double(qps, 0, "Open loop: calls per second, each timed from its scheduled send time");
DEFINE_validator(qps, &CheckNonNegative);
DEFINE_int32(concurrency, 0, "Closed loop: calls kept in flight (maximum-throughput mode)");
DEFINE_validator(concurrency, &CheckNonNegativeInt);
DEFINE_int32(payload_scale, 10, "Workload payload_scale (10: ~136 KB, ~11,700 strings)");
DEFINE_validator(payload_scale, &CheckPositiveInt);
DEFINE_string(payload_mix, "",
              "Echo calls of several payload_scales, SCALE:WEIGHT,... (10:90,0:10: every tenth "
              "call has an empty payload; 10:1,1:1 alternates); replaces --payload_scale");
DEFINE_int32(ring, 64, "Pre-generate this many requests and cycle through them; 0 = draw a fresh "
             "payload for every call (costs client CPU)");
DEFINE_validator(ring, &CheckNonNegativeInt);
DEFINE_double(warmup_s, 2, "Seconds of load before measuring");
DEFINE_validator(warmup_s, &CheckNonNegative);
DEFINE_double(duration_s, 10, "Seconds measured");
DEFINE_validator(duration_s, &CheckPositive);
DEFINE_string(connection_type, "single", "single | pooled | short");
DEFINE_bool(tls, false, "baidu_std over TLS (docs/tls.md)");
DEFINE_string(tls_ca, "", "--tls: PEM CA that verifies the server (empty = system trust store)");
DEFINE_string(tls_sni, "", "--tls: name sent as SNI and verified (empty = the host of --server)");
DEFINE_validator(connection_type, &CheckConnectionType);
DEFINE_int64(timeout_ms, 1000, "Per-call timeout");
DEFINE_validator(timeout_ms, &CheckPositiveInt64);
DEFINE_bool(deliver_timeout, false,
            "baidu_std: send each call's remaining timeout to the server (RpcRequestMeta."
            "timeout_ms, ChannelOptions::deliver_timeout), so that it can refuse or drop calls "
            "that would miss it");
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
DEFINE_string(proto, "", "A user's method instead of the echo workload: the .proto declaring it "
              "(with --replay: the services' .proto, to send HTTP+JSON records over "
              "--replay_protocol baidu_std or grpc)");
DEFINE_string(proto_path, "", "Import directories of --proto, ':'-separated (its own directory is "
              "searched last)");
DEFINE_string(echo_service, "EchoService",
              "The echo workload's service: EchoService, or OptionalEchoService (the same bytes "
              "to the schema that declares the payload `optional`)");
DEFINE_string(method, "", "The method to press, pkg.Service.Method (needs --proto and --input)");
DEFINE_string(input, "", "Requests in JSON: one object per line, one object, or an array; "
              "cycled in order");
DEFINE_bool(check_response, false, "--method: parse each response into the output type; one that "
            "does not parse or has undeclared fields counts as RESPONSE_MISMATCH");
DEFINE_string(replay, "", "Play dump files (docs/capture.md): a directory of requests.* files, or "
              "files, ','-separated; each record over the protocol it was captured on");
DEFINE_string(replay_protocol, "", "--replay: send every record over this protocol instead "
              "(baidu_std | http | grpc)");
DEFINE_bool(replay_check, false, "--replay: a first pass sends each record once and keeps its "
            "reply; the load then counts replies that differ from it, by method");
DEFINE_string(replay_replies_out, "", "--replay_check: also write the first pass's replies to this "
              "file, for --replay_replies_in of a later run");
DEFINE_string(replay_replies_in, "", "--replay_check: compare with the replies of this file "
              "(--replay_replies_out of an earlier run over the same dump) instead of a first pass");
DEFINE_bool(server_vars, true, "Read the server's /vars over HTTP before and after the window and "
            "report its own view (skipped with a note when the server does not answer HTTP)");

namespace press = arenarpc::press;

namespace {

// The echo workload's scales: --payload_mix (validated already), else --payload_scale alone.
std::vector<press::PayloadShare> EchoMix(const press::PressOptions& options) {
  std::vector<press::PayloadShare> mix;
  if (options.payload_mix.empty() || !press::ParsePayloadMix(options.payload_mix, &mix).empty()) {
    mix = {{options.payload_scale, 1}};
  }
  return mix;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "load generator for the echo workload or any method\n"
      "  arenarpc_press --server 127.0.0.1:8000 --qps 800 --duration_s 30 --server_pid PID\n"
      "  arenarpc_press --server 127.0.0.1:8000 --concurrency 8   # maximum throughput\n"
      "  arenarpc_press --proto my.proto --method pkg.Service.Method --input requests.json --qps 500");
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
  options.payload_mix = FLAGS_payload_mix;
  options.ring = FLAGS_ring;
  options.warmup_s = FLAGS_warmup_s;
  options.duration_s = FLAGS_duration_s;
  options.connection_type = FLAGS_connection_type;
  options.tls = FLAGS_tls;
  options.tls_ca = FLAGS_tls_ca;
  options.tls_sni = FLAGS_tls_sni;
  options.timeout_ms = FLAGS_timeout_ms;
  options.deliver_timeout = FLAGS_deliver_timeout;
  options.connections = FLAGS_connections;
  options.lb = FLAGS_lb;
  options.threads = FLAGS_threads;
  options.server_pid = FLAGS_server_pid;
  options.max_inflight = FLAGS_max_inflight;
  options.verify = FLAGS_verify;
  options.seed = FLAGS_seed;
  options.live = FLAGS_live;
  options.proto = FLAGS_proto;
  options.replay = !FLAGS_replay.empty();
  options.proto_path = FLAGS_proto_path;
  options.method = FLAGS_method;
  options.echo_service = FLAGS_echo_service;
  options.input = FLAGS_input;
  options.check_response = FLAGS_check_response;
  options.server_vars = FLAGS_server_vars;
  if (const std::string error = arenarpc::press::Validate(options); !error.empty()) {
    std::fprintf(stderr, "arenarpc_press: %s\n", error.c_str());
    return 2;
  }
  // --replay: the dump's records, each over its own protocol (or --replay_protocol).
  std::unique_ptr<press::DynamicMethod> replay_schema;  // --replay --proto
  std::unique_ptr<press::ReplaySet> replay;
  press::ReplayDifferences replay_differences;
  if (!FLAGS_replay.empty()) {
    if (!options.method.empty()) {
      std::fprintf(stderr, "arenarpc_press: --replay and --method exclude each other\n");
      return 2;
    }
    press::ReplayProtocol forced{};
    if (!FLAGS_replay_protocol.empty() &&
        !press::ParseReplayProtocol(FLAGS_replay_protocol, &forced)) {
      std::fprintf(stderr, "arenarpc_press: --replay_protocol '%s' is not baidu_std, http or grpc\n",
                   FLAGS_replay_protocol.c_str());
      return 2;
    }
    std::vector<std::string> sources;
    for (size_t start = 0; start <= FLAGS_replay.size();) {
      const size_t comma = std::min(FLAGS_replay.find(',', start), FLAGS_replay.size());
      if (comma > start) sources.push_back(FLAGS_replay.substr(start, comma - start));
      start = comma + 1;
    }
    replay = std::make_unique<press::ReplaySet>();
    std::string error;
    if (!options.proto.empty()) {
      replay_schema = press::DynamicMethod::LoadFile(options.proto, options.proto_path, &error);
      if (!replay_schema) {
        std::fprintf(stderr, "arenarpc_press: %s\n", error.c_str());
        return 2;
      }
    }
    if (!replay->Load(sources, FLAGS_replay_protocol.empty() ? nullptr : &forced,
                      replay_schema.get(), std::cerr, &error)) {
      std::fprintf(stderr, "arenarpc_press: %s\n", error.c_str());
      return 2;
    }
  } else if (FLAGS_replay_check || !FLAGS_replay_protocol.empty()) {
    std::fprintf(stderr, "arenarpc_press: --replay_check and --replay_protocol need --replay\n");
    return 2;
  }
  if ((!FLAGS_replay_replies_out.empty() || !FLAGS_replay_replies_in.empty()) &&
      !FLAGS_replay_check) {
    std::fprintf(stderr,
                 "arenarpc_press: --replay_replies_out and --replay_replies_in need --replay_check\n");
    return 2;
  }
  if (!FLAGS_replay_replies_out.empty() && !FLAGS_replay_replies_in.empty()) {
    std::fprintf(stderr,
                 "arenarpc_press: --replay_replies_out and --replay_replies_in exclude each other\n");
    return 2;
  }
  if (std::string error;
      !FLAGS_replay_replies_in.empty() &&
      !press::LoadReplies(FLAGS_replay_replies_in, *replay, &error)) {
    std::fprintf(stderr, "arenarpc_press: %s\n", error.c_str());
    return 2;
  }
  auto transport = replay ? press::MakeReplayTransport(*replay)
                          : arenarpc::press::MakeTransport(options.protocol);
  if (!transport) {
    std::string known;
    for (const auto& name : arenarpc::press::TransportNames()) known += " " + name;
    std::fprintf(stderr, "arenarpc_press: unknown --protocol '%s' (built-in:%s)\n",
                 options.protocol.c_str(), known.c_str());
    return 2;
  }
  // A user's method: its .proto and its requests, converted once, before anything is sent.
  std::unique_ptr<press::DynamicMethod> user_method;
  std::vector<std::shared_ptr<const press::PressRequest>> user_requests;
  if (!options.method.empty()) {
    std::string error;
    user_method = press::DynamicMethod::Load(options.proto, options.proto_path, options.method,
                                             &error);
    std::vector<std::unique_ptr<google::protobuf::Message>> messages;
    if (!user_method ||
        !press::LoadJsonRequests(options.input, user_method->input_prototype(), &messages,
                                 &error)) {
      std::fprintf(stderr, "arenarpc_press: %s\n", error.c_str());
      return 2;
    }
    for (const auto& message : messages) {
      user_requests.push_back(press::MakeUserRequest(*message, options.protocol == "http"));
    }
  }
  arenarpc::press::TransportOptions transport_options;
  transport_options.server = options.server;
  transport_options.load_balancer = options.lb;
  transport_options.connection_type = options.connection_type;
  transport_options.timeout_ms = options.timeout_ms;
  transport_options.deliver_timeout = options.deliver_timeout;
  transport_options.connections = options.connections;
  transport_options.io_threads = options.threads;
  const google::protobuf::ServiceDescriptor* echo_service =
      options.echo_service == "OptionalEchoService"
          ? arenarpc::example::OptionalEchoService::descriptor()
          : arenarpc::example::EchoService::descriptor();
  transport_options.echo_method = echo_service->FindMethodByName("Echo");
  const std::string echo_method = transport_options.echo_method->full_name();
  transport_options.grpc_path = FLAGS_grpc_path;
  transport_options.tls = options.tls;
  transport_options.tls_ca_file = options.tls_ca;
  transport_options.tls_sni_host = options.tls_sni;
  if (user_method) {
    transport_options.method = &user_method->method();
    if (options.check_response) {
      transport_options.response_prototype = &user_method->output_prototype();
    }
  }
  if (std::string error; !transport->Init(transport_options, &error)) {
    std::fprintf(stderr, "arenarpc_press: %s\n", error.c_str());
    return 1;
  }
  if (options.live && options.ring > 0 && !user_method) {
    std::fprintf(stderr, "[press] pre-generating %d requests (%s %s)...\n", options.ring,
                 options.payload_mix.empty() ? "payload_scale" : "payload_mix",
                 options.payload_mix.empty() ? std::to_string(options.payload_scale).c_str()
                                             : options.payload_mix.c_str());
  }
  if (replay && FLAGS_replay_check && FLAGS_replay_replies_in.empty()) {
    const uint64_t unchecked = press::RecordFirstReplies(
        *transport, *replay, options.concurrency > 0 ? options.concurrency : 16);
    std::fprintf(stderr,
                 "[replay] first pass: %zu records sent, %llu left unchecked (their calls failed "
                 "for the load's sake twice: timed out, refused, connection lost)\n",
                 replay->requests().size(), static_cast<unsigned long long>(unchecked));
    if (std::string error; !FLAGS_replay_replies_out.empty() &&
                           !press::SaveReplies(*replay, FLAGS_replay_replies_out, &error)) {
      std::fprintf(stderr, "arenarpc_press: %s\n", error.c_str());
      return 1;
    }
  }
  if (replay) user_requests = replay->requests();
  const size_t distinct_requests = user_requests.size();
  std::unique_ptr<press::RequestSource> requests =
      (user_method || replay) ? std::make_unique<press::RequestSource>(std::move(user_requests))
                  : std::make_unique<press::RequestSource>(EchoMix(options), options.ring,
                                                           options.seed,
                                                           options.protocol == "http");
  press::LoadDriver driver(options, *transport, *requests);
  if (replay) {
    driver.SetResponseCheck(FLAGS_replay_check ? press::ResponseCheck::Replay(replay_differences)
                                               : press::ResponseCheck::None());
  } else if (user_method) {
    driver.SetResponseCheck(options.check_response
                                ? press::ResponseCheck::OutputType(user_method->output_prototype())
                                : press::ResponseCheck::None());
  }
  std::optional<press::ServerVarsProbe> vars;
  if (options.server_vars) {
    vars.emplace(options.server, replay        ? replay->calls().front().method_name
                                 : user_method ? user_method->method().full_name()
                                               : echo_method);
    driver.SetWindowHooks([&] { vars->AtWindowStart(); },
                          [&](press::PressResult& result) { vars->AtWindowEnd(result); });
  }
  auto result = driver.Run(options.live ? &std::cerr : nullptr);
  result.distinct_requests = distinct_requests;
  result.server_attempts = transport->ServerAttempts();
  std::cout << (FLAGS_json ? arenarpc::press::FormatJson(result)
                           : arenarpc::press::FormatText(result))
            << std::flush;
  if (replay) {
    // After the report (the JSON document stays one object): what was replayed and, with
    // --replay_check, the replies that differed from the first pass's, by method.
    std::cerr << "[replay] records: " << replay->requests().size() << " (";
    const char* separator = "";
    for (const auto& [protocol, count] : replay->by_protocol()) {
      std::cerr << separator << protocol << " " << count;
      separator = ", ";
    }
    std::cerr << "); damaged stretches skipped: " << replay->damaged_stretches() << "\n";
    if (FLAGS_replay_check) {
      uint64_t total = 0;
      for (const auto& [method, count] : replay_differences.by_method()) {
        std::cerr << "[replay] differences " << method << ": " << count << "\n";
        total += count;
      }
      std::cerr << "[replay] differences total: " << total << "\n";
    }
  }
  // Exit status: 0 if at least one call succeeded in the window, 1 if none did.
  return result.calls_ok > 0 ? 0 : 1;
}
