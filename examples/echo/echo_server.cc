// echo_server: the benchmark's echo service (docs/benchmarks.md) on arenarpc, with every memory
// setting of ServerOptions as a flag. Prints one line once it listens:
//   echo_server listening on 127.0.0.1:8000 mode=arena pid=1234
// and stops cleanly on SIGINT/SIGTERM (calls in flight finish first), printing its statistics.
#include <gflags/gflags.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "arenarpc/memory/message_memory.h"
#include "arenarpc/rpcz.h"
#include "arenarpc/server.h"
#include "echo/echo_service.h"
#ifdef ARENARPC_ECHO_WITH_ETCD
#include "arenarpc/cluster/etcd.h"  // registry_url etcd://... (docs/cluster.md)
#endif

namespace {

bool Fail(const char* flag, const std::string& why) {
  std::fprintf(stderr, "echo_server: --%s: %s\n", flag, why.c_str());
  return false;
}
bool CheckAddress(const char* flag, const std::string& v) {
  const size_t colon = v.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == v.size()) {
    return Fail(flag, "'" + v + "' is not ip:port");
  }
  const std::string port = v.substr(colon + 1);
  if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5 ||
      std::stoul(port) > 65535) {
    return Fail(flag, "'" + v + "' has an invalid port (0..65535, 0 = pick one)");
  }
  return true;
}
bool CheckMode(const char* flag, const std::string& v) {
  if (v == "heap" || v == "arena" || v == "paged" || v == "reuse" || v == "auto") return true;
  return Fail(flag, "must be heap, arena, paged, reuse or auto, got '" + v + "'");
}
bool CheckHandler(const char* flag, const std::string& v) {
  return v == "copy" || v == "scratch";
}
bool CheckNonNegative(const char* flag, int32_t v) {
  return v >= 0 || Fail(flag, "must be >= 0, got " + std::to_string(v));
}
bool CheckPositive(const char* flag, uint64_t v) {
  return v > 0 || Fail(flag, "must be > 0");
}
bool CheckAtLeastOne(const char* flag, int32_t v) {
  return v >= 1 || Fail(flag, "must be >= 1, got " + std::to_string(v));
}
// A duration option's default as its --x_ms flag spells it.
int32_t FlagMs(std::chrono::milliseconds duration) {
  return static_cast<int32_t>(duration.count());
}

bool CheckTimeout(const char* flag, int32_t v) {
  return v == -1 || v > 0 || Fail(flag, "must be -1 (never) or > 0, got " + std::to_string(v));
}
bool CheckMaxConcurrency(const char* flag, const std::string& v) {
  const arenarpc::MaxConcurrency parsed(v);
  if (!parsed.error().empty()) return Fail(flag, "'" + v + "': " + parsed.error());
  return parsed.fixed_limit() >= 0 || Fail(flag, "must be >= 0, got " + v);
}

}  // namespace

DEFINE_string(address, "127.0.0.1:8000", "Listen on ip:port (port 0 = pick a free one)");
DEFINE_validator(address, &CheckAddress);
DEFINE_int32(threads, 0, "I/O threads (handlers run on them unless --worker_threads); 0 = nproc");
DEFINE_validator(threads, &CheckNonNegative);
DEFINE_int32(worker_threads, 0, "> 0: run handlers on a separate pool of this many threads");
DEFINE_validator(worker_threads, &CheckNonNegative);
DEFINE_string(mode, "auto", "Message memory: auto | heap | arena | paged | reuse");
DEFINE_int32(rpcz_spans_per_second, -1,
             "Calls sampled into /rpcz per second (0 = off; -1 = the library's default)");
DEFINE_validator(mode, &CheckMode);
DEFINE_uint64(page_size, arenarpc::memory::MemoryOptions{}.page_size,
              "paged: bytes per page of the page pool");
DEFINE_validator(page_size, &CheckPositive);
DEFINE_uint64(page_cache_capacity, arenarpc::memory::MemoryOptions{}.page_cache_capacity,
              "paged: free pages kept cached (not returned to the OS)");
DEFINE_uint64(thread_cache_pages, arenarpc::memory::MemoryOptions{}.thread_cache_pages,
              "paged: free pages each thread keeps for itself");
DEFINE_uint64(reuse_max_pooled, arenarpc::memory::ReuseSettings{}.max_pooled_objects,
              "reuse: pooled objects per message type");
DEFINE_validator(reuse_max_pooled, &CheckPositive);
DEFINE_uint64(reuse_max_object_bytes, arenarpc::memory::ReuseSettings{}.max_object_bytes,
              "reuse: an object retaining more bytes is cut back to its content (destroyed if "
              "its content alone is larger)");
DEFINE_validator(reuse_max_object_bytes, &CheckPositive);
DEFINE_uint64(reuse_max_pool_bytes, arenarpc::memory::ReuseSettings{}.max_pool_bytes,
              "reuse: estimated bytes retained per message type's pool");
DEFINE_validator(reuse_max_pool_bytes, &CheckPositive);
DEFINE_bool(reuse_mirror_responses, arenarpc::memory::ReuseSettings{}.mirror_responses,
            "reuse: fit each response's kept tree to its request's shape (fields they share)");
DEFINE_bool(reuse_keep_response_submessages,
            arenarpc::memory::ReuseSettings{}.keep_response_submessages,
            "reuse: keep responses' proto3 singular sub-messages attached between calls (faster; "
            "an empty one the handler touches is then not sent: docs/memory.md)");
DEFINE_uint64(reuse_min_call_bytes, arenarpc::memory::ReuseSettings{}.min_call_bytes,
              "reuse: a method whose mean request + response wire size is below this has its "
              "messages made on a paged arena (0: always pooled)");
DEFINE_bool(reuse_request_arenas, arenarpc::memory::ReuseSettings{}.request_arenas,
            "reuse: make each pooled request on an arena of its own where its type allows "
            "(docs/memory.md)");
DEFINE_bool(reuse_response_arenas, arenarpc::memory::ReuseSettings{}.response_arenas,
            "reuse: make each pooled response on an arena of its own where its type allows "
            "(docs/memory.md)");
DEFINE_uint64(arena_start_block_size, arenarpc::memory::ArenaSettings{}.start_block_size,
              "arena/paged: first block of a call's arena");
DEFINE_validator(arena_start_block_size, &CheckPositive);
DEFINE_uint64(arena_max_block_size, arenarpc::memory::ArenaSettings{}.max_block_size,
              "arena/paged: largest block of a call's arena");
DEFINE_validator(arena_max_block_size, &CheckPositive);
DEFINE_string(max_concurrency, "0",
              "Calls in flight (decoded, not yet answered); excess get ELIMIT. A number "
              "(0 = unlimited) or 'auto' (adaptive)");
DEFINE_validator(max_concurrency, &CheckMaxConcurrency);
DEFINE_int32(max_queued_requests, arenarpc::ServerOptions{}.max_queued_requests,
             "Admitted calls waiting for a thread, all connections; excess get ELIMIT. 0 = unlimited");
DEFINE_validator(max_queued_requests, &CheckNonNegative);
DEFINE_int32(max_queued_requests_per_connection,
             arenarpc::ServerOptions{}.max_queued_requests_per_connection,
             "Calls of one connection waiting for a thread; past it that connection is not read");
DEFINE_validator(max_queued_requests_per_connection, &CheckAtLeastOne);
DEFINE_uint64(max_queued_request_bytes, arenarpc::ServerOptions{}.max_queued_request_bytes,
              "Request bytes of one connection's calls not yet started; past it it is not read");
DEFINE_validator(max_queued_request_bytes, &CheckPositive);
DEFINE_uint64(max_unwritten_bytes, arenarpc::ServerOptions{}.max_unwritten_bytes,
              "Memory held by one connection's unsent replies; past it it is not read");
DEFINE_validator(max_unwritten_bytes, &CheckPositive);
DEFINE_uint64(max_request_memory, arenarpc::ServerOptions{}.max_request_memory,
              "What one request may hold once parsed (estimated before parsing); more: EREQUEST. "
              "0 = no bound");
DEFINE_uint64(max_inflight_message_memory, arenarpc::ServerOptions{}.max_inflight_message_memory,
              "What the messages of all calls in flight may hold; past it: ELIMIT. 0 = no bound");
DEFINE_string(auto_candidates, "paged,reuse,arena,heap",
              "auto: the strategies it tries, comma-separated, the first serving until a trial "
              "decides");
DEFINE_uint32(auto_trial_calls, arenarpc::memory::AutoSettings{}.trial_calls,
              "auto: counted calls per candidate in a trial");
DEFINE_uint32(auto_trial_block, arenarpc::memory::AutoSettings{}.trial_block,
              "auto: consecutive calls a candidate serves before the next takes its turn");
DEFINE_validator(auto_trial_block, [](const char*, uint32_t v) { return v > 0; });
DEFINE_double(auto_max_held_ratio, arenarpc::memory::AutoSettings{}.max_held_ratio,
              "auto: > 0 (>= 1), candidates holding more than this many times the leanest's "
              "bytes per call are not chosen; 0 = CPU alone");
DEFINE_bool(reuse_arena_responses, arenarpc::memory::ReuseSettings{}.arena_responses,
            "reuse: make response types with subtrees exact reuse cannot keep on a paged arena");
DEFINE_string(handler, "copy",
              "copy: the response's payload is CopyFrom(request's); scratch: built field by field");
DEFINE_validator(handler, &CheckHandler);
DEFINE_string(tls_cert, "", "TLS on the same port (docs/tls.md): PEM certificate chain");
DEFINE_string(tls_key, "", "TLS: PEM private key of --tls_cert");
DEFINE_string(tls_client_ca, "", "TLS: require client certificates signed by this PEM CA (mTLS)");
DEFINE_bool(tls_require, false, "TLS: refuse clear-text connections");
DEFINE_string(main_port_pages, "all", "Built-in pages on the main port: all | health | none");
DEFINE_int32(max_connections, arenarpc::ServerOptions{}.max_connections,
             "Open connections; more are closed at once. 0 = unlimited");
DEFINE_validator(max_connections, &CheckNonNegative);
DEFINE_uint64(max_body_size, arenarpc::ServerOptions{}.max_body_size,
              "Largest request frame body, and what a compressed request may inflate to");
DEFINE_validator(max_body_size, &CheckPositive);
DEFINE_int32(idle_timeout_sec, -1, "Close connections idle this long; -1 = never");
DEFINE_validator(idle_timeout_sec, &CheckTimeout);
DEFINE_int32(read_timeout_ms, FlagMs(arenarpc::ServerOptions{}.read_timeout),
             "Close a connection whose frame does not complete within this long; -1 = never");
DEFINE_validator(read_timeout_ms, &CheckTimeout);
DEFINE_int32(first_byte_timeout_ms, FlagMs(arenarpc::ServerOptions{}.first_byte_timeout),
             "Close a connection that sends nothing this long after it was accepted; -1 = never");
DEFINE_validator(first_byte_timeout_ms, &CheckTimeout);
DEFINE_int32(write_timeout_ms, FlagMs(arenarpc::ServerOptions{}.write_timeout),
             "Close a connection whose replies find no room in its socket this long; -1 = never");
DEFINE_validator(write_timeout_ms, &CheckTimeout);
DEFINE_int32(stop_deadline_ms, FlagMs(arenarpc::ServerOptions{}.stop_deadline),
             "On SIGINT/SIGTERM: how long calls in flight and unsent replies get");
DEFINE_validator(stop_deadline_ms, &CheckNonNegative);
DEFINE_int32(max_fibers, arenarpc::ServerOptions{}.max_fibers,
             "Fibers alive at once (handlers running or waiting); past it calls get ELIMIT");
DEFINE_uint64(fiber_stack_size, arenarpc::ServerOptions{}.fiber_stack_size,
              "Stack of each handler's fiber, bytes (>= 16384)");

DEFINE_string(registry_url, "",
              "Register in a registry while running, e.g. etcd://127.0.0.1:2379/services/echo "
              "(docs/cluster.md); empty = not registered");
DEFINE_int32(registry_lease_ttl_ms, FlagMs(arenarpc::ServerOptions{}.registry_lease_ttl),
             "Registration lease: a crashed server disappears this long after it died");
DEFINE_string(advertised_address, "", "ip:port to register (default: the listening address)");

void PrintMethodStats(const arenarpc::MethodStats& stats) {
  std::fprintf(stderr,
               "echo_server stopped: %s: %llu calls, %llu errors, %llu rejected, latency "
               "p50/p99/max %lld/%lld/%lld us, queued p99 %lld us (mode %s)\n",
               stats.full_name.c_str(), static_cast<unsigned long long>(stats.calls),
               static_cast<unsigned long long>(stats.errors),
               static_cast<unsigned long long>(stats.rejected),
               static_cast<long long>(stats.latency_p50_us),
               static_cast<long long>(stats.latency_p99_us),
               static_cast<long long>(stats.latency_max_us),
               static_cast<long long>(stats.queue_p99_us), stats.memory_mode.c_str());
  if (const auto& choice = stats.memory_choice) {
    std::fprintf(stderr, "auto: serving with %s after %llu trials, %llu switches; %s\n",
                 choice->chosen.c_str(), static_cast<unsigned long long>(choice->trials),
                 static_cast<unsigned long long>(choice->switches), choice->reason.c_str());
  }
  for (const auto& advice : stats.presence_advice) {
    std::fprintf(stderr,
                 "advice: %s holds %.1f%% of a response; declare it `%s` (the same wire bytes) "
                 "so that reuse keeps its subtree\n",
                 advice.field.c_str(), 100 * advice.share, advice.suggested.c_str());
  }
  if (stats.memory.objects_pooled != 0 || stats.memory.reuses != 0) {
    const auto& m = stats.memory;
    std::fprintf(stderr,
                 "reuse: %llu objects pooled, ~%llu KB retained, %llu reuses, %llu trims, "
                 "%llu rebuilds, %llu requests shaped, %llu responses mirrored, "
                 "%llu small calls on the arena\n",
                 static_cast<unsigned long long>(m.objects_pooled),
                 static_cast<unsigned long long>(m.retained_bytes_estimate / 1024),
                 static_cast<unsigned long long>(m.reuses), static_cast<unsigned long long>(m.trims),
                 static_cast<unsigned long long>(m.rebuilds),
                 static_cast<unsigned long long>(m.requests_shaped),
                 static_cast<unsigned long long>(m.responses_mirrored),
                 static_cast<unsigned long long>(m.calls_on_arena));
  }
}

int main(int argc, char** argv) {
  gflags::SetUsageMessage("arenarpc echo server for the memory-mode benchmark");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_rpcz_spans_per_second >= 0) arenarpc::SetRpczSpansPerSecond(FLAGS_rpcz_spans_per_second);
  if (argc > 1) {
    std::fprintf(stderr, "echo_server: unexpected argument '%s'\n", argv[1]);
    return 2;
  }
  arenarpc::ServerOptions options;
  options.num_threads = FLAGS_threads;
  options.worker_threads = FLAGS_worker_threads;
  options.memory_mode = FLAGS_mode;
  options.max_concurrency = FLAGS_max_concurrency;
  options.max_queued_requests = FLAGS_max_queued_requests;
  options.max_queued_requests_per_connection = FLAGS_max_queued_requests_per_connection;
  options.max_queued_request_bytes = FLAGS_max_queued_request_bytes;
  options.max_unwritten_bytes = FLAGS_max_unwritten_bytes;
  options.max_request_memory = FLAGS_max_request_memory;
  options.max_inflight_message_memory = FLAGS_max_inflight_message_memory;
  options.max_connections = FLAGS_max_connections;
  options.tls.cert_file = FLAGS_tls_cert;
  options.tls.key_file = FLAGS_tls_key;
  options.tls.client_ca_file = FLAGS_tls_client_ca;
  options.tls.require_tls = FLAGS_tls_require;
  if (FLAGS_main_port_pages == "all") {
    options.main_port_pages = arenarpc::MainPortPages::kAll;
  } else if (FLAGS_main_port_pages == "health") {
    options.main_port_pages = arenarpc::MainPortPages::kHealth;
  } else if (FLAGS_main_port_pages == "none") {
    options.main_port_pages = arenarpc::MainPortPages::kNone;
  } else {
    std::fprintf(stderr, "--main_port_pages=%s: expected all | health | none\n",
                 FLAGS_main_port_pages.c_str());
    return 1;
  }
  options.max_body_size = FLAGS_max_body_size;
  options.idle_timeout_sec = FLAGS_idle_timeout_sec;
  options.read_timeout = std::chrono::milliseconds(FLAGS_read_timeout_ms);
  options.first_byte_timeout = std::chrono::milliseconds(FLAGS_first_byte_timeout_ms);
  options.write_timeout = std::chrono::milliseconds(FLAGS_write_timeout_ms);
  options.stop_deadline = std::chrono::milliseconds(FLAGS_stop_deadline_ms);
  options.max_fibers = FLAGS_max_fibers;
  options.fiber_stack_size = FLAGS_fiber_stack_size;
  options.registry_url = FLAGS_registry_url;
  options.registry_lease_ttl = std::chrono::milliseconds(FLAGS_registry_lease_ttl_ms);
  options.advertised_address = FLAGS_advertised_address;
  options.memory.page_size = FLAGS_page_size;
  options.memory.page_cache_capacity = FLAGS_page_cache_capacity;
  options.memory.thread_cache_pages = FLAGS_thread_cache_pages;
  options.memory.reuse.max_pooled_objects = FLAGS_reuse_max_pooled;
  options.memory.reuse.max_object_bytes = FLAGS_reuse_max_object_bytes;
  options.memory.reuse.max_pool_bytes = FLAGS_reuse_max_pool_bytes;
  options.memory.reuse.mirror_responses = FLAGS_reuse_mirror_responses;
  options.memory.reuse.keep_response_submessages = FLAGS_reuse_keep_response_submessages;
  options.memory.reuse.arena_responses = FLAGS_reuse_arena_responses;
  options.memory.reuse.min_call_bytes = FLAGS_reuse_min_call_bytes;
  options.memory.reuse.request_arenas = FLAGS_reuse_request_arenas;
  options.memory.reuse.response_arenas = FLAGS_reuse_response_arenas;
  options.memory.automatic.candidates.clear();
  for (size_t begin = 0; begin <= FLAGS_auto_candidates.size();) {
    const size_t end = std::min(FLAGS_auto_candidates.find(',', begin), FLAGS_auto_candidates.size());
    options.memory.automatic.candidates.push_back(FLAGS_auto_candidates.substr(begin, end - begin));
    begin = end + 1;
  }
  options.memory.automatic.trial_calls = FLAGS_auto_trial_calls;
  options.memory.automatic.trial_block = FLAGS_auto_trial_block;
  options.memory.automatic.max_held_ratio = FLAGS_auto_max_held_ratio;
  options.memory.arena.start_block_size = FLAGS_arena_start_block_size;
  options.memory.arena.max_block_size = FLAGS_arena_max_block_size;
  // Cross-field rules live there.
  if (std::string error; arenarpc::memory::ValidateMemoryOptions(options.memory, &error) != 0) {
    std::fprintf(stderr, "echo_server: invalid memory options: %s\n", error.c_str());
    return 2;
  }

  arenarpc::example::EchoServiceImpl service(FLAGS_handler == "scratch");
  arenarpc::example::OptionalEchoServiceImpl optional_service;  // --workload optional
  arenarpc::Server server;
  if (server.AddService(&service, arenarpc::SERVER_DOESNT_OWN_SERVICE) != 0 ||
      server.AddService(&optional_service, arenarpc::SERVER_DOESNT_OWN_SERVICE) != 0 ||
      server.Start(FLAGS_address, options) != 0) {
    std::fprintf(stderr, "echo_server: cannot start on %s: %s\n", FLAGS_address.c_str(),
                 server.last_error().c_str());
    return 1;
  }
  const std::string host = FLAGS_address.substr(0, FLAGS_address.rfind(':'));
  // The mode serving the methods: --mode, or ARENARPC_MEMORY_MODE where that is set.
  const std::string mode = server.GetMethodStats("arenarpc.example.EchoService.Echo").memory_mode;
  std::printf("echo_server listening on %s:%d mode=%s pid=%d\n", host.c_str(),
              server.listen_port(), mode.c_str(), static_cast<int>(getpid()));
  std::fflush(stdout);

  server.RunUntilAskedToQuit();

  const auto server_stats = server.GetServerStats();
  std::fprintf(stderr,
               "echo_server: %llu requests, rejected %llu ELIMIT / %llu EOVERCROWDED / %llu "
               "ERPCTIMEDOUT, %llu read pauses, concurrency limit %d at exit\n",
               static_cast<unsigned long long>(server_stats.requests),
               static_cast<unsigned long long>(server_stats.rejected_limit),
               static_cast<unsigned long long>(server_stats.rejected_overcrowded),
               static_cast<unsigned long long>(server_stats.rejected_timed_out),
               static_cast<unsigned long long>(server_stats.read_pauses),
               server_stats.concurrency_limit);
  for (const char* method :
       {"arenarpc.example.EchoService.Echo", "arenarpc.example.OptionalEchoService.Echo"}) {
    const auto stats = server.GetMethodStats(method);
    if (stats.calls + stats.rejected != 0) PrintMethodStats(stats);
  }
  return 0;
}
