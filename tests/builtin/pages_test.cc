// The observability pages on a real server, in every memory strategy: calls are made over
// loopback, then each page's handler is called directly (no HTTP) and what it says is checked
// against the calls.

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "builtin/builtin_pages.h"
#include "builtin/builtin_registry.h"
#include "http_get.h"
#include "server/server_access.h"
#include "server_fixture.h"

namespace arenarpc::builtin {
namespace {

using e2e::TestRequest;
using e2e::TestResponse;
using e2e::TestService_Stub;

constexpr char kEcho[] = "arenarpc.e2e.TestService.Echo";
constexpr char kEchoVar[] = "rpc_server_arenarpc_e2e_TestService_Echo_";
constexpr int kGoodCalls = 20, kFailedCalls = 3;

class PagesTest : public e2e::ServerTest {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.max_concurrency = 77;
    options.read_timeout = std::chrono::milliseconds(4321);
    StartServer(options);
    AddObservabilityPages(&registry_, internal::ServerAccess::View(*server_),
                          internal::ServerAccess::Settings(*server_));
  }

  BuiltinReply Get(const std::string& path, std::map<std::string, std::string> query = {}) {
    BuiltinRequest request;
    request.method = "GET";
    request.path = path;
    request.query = std::move(query);
    BuiltinReply reply;
    const BuiltinHandler* handler = registry_.Find(path);
    EXPECT_NE(nullptr, handler) << path;
    if (handler != nullptr) (*handler)(request, &reply);
    return reply;
  }

  // kGoodCalls successful calls, kFailedCalls failed with EINTERNAL (2001) by the handler, and one
  // request whose payload does not parse (EREQUEST, rejected before the handler).
  void MakeCalls() {
    channel_ = MakeChannel();
    TestService_Stub stub(channel_.get());
    for (int i = 0; i < kGoodCalls + kFailedCalls; ++i) {
      Controller controller;
      TestRequest request;
      request.set_message(std::string(100 + i, 'x'));
      if (i >= kGoodCalls) {
        request.set_fail_code(2001);
        request.set_fail_text("boom");
      }
      TestResponse response;
      stub.Echo(&controller, &request, &response, nullptr);
      ASSERT_EQ(i >= kGoodCalls, controller.Failed()) << controller.ErrorText();
    }
    raw_ = std::make_unique<e2e::RawClient>(port_);  // stays connected
    e2e::RawRequest bad;
    bad.raw_payload = std::string("\xff\xff\xff", 3);
    EXPECT_EQ(1003, raw_->Call(bad).error_code);
    // A pair goes back to its strategy just after its reply was queued: wait for the last one.
    ExpectAllPairsReleased(kEcho);
  }

  std::map<std::string, std::string> Vars(std::map<std::string, std::string> query = {},
                                          const std::string& path = "/vars") {
    const BuiltinReply reply = Get(path, std::move(query));
    EXPECT_EQ(200, reply.status);
    std::map<std::string, std::string> vars;
    std::istringstream lines(reply.body);
    std::string line;
    while (std::getline(lines, line)) {
      const size_t colon = line.find(" : ");
      EXPECT_NE(std::string::npos, colon) << line;
      if (colon != std::string::npos) vars[line.substr(0, colon)] = line.substr(colon + 3);
    }
    return vars;
  }

  BuiltinRegistry registry_;
  std::unique_ptr<Channel> channel_;
  std::unique_ptr<e2e::RawClient> raw_;
};

double Number(const std::map<std::string, std::string>& vars, const std::string& name) {
  const auto it = vars.find(name);
  if (it == vars.end()) {
    ADD_FAILURE() << "no var " << name;
    return -1;
  }
  return std::stod(it->second);
}

TEST_P(PagesTest, VarsKeepTheContractNamesAndCountTheCalls) {
  MakeCalls();
  const auto vars = Vars();
  const std::string m = kEchoVar;
  const int calls = kGoodCalls + kFailedCalls;
  EXPECT_EQ(calls, Number(vars, m + "count"));
  EXPECT_EQ(kFailedCalls, Number(vars, m + "error_count"));
  EXPECT_EQ(1, Number(vars, m + "rejected_count"));
  EXPECT_EQ(kFailedCalls, Number(vars, m + "errno_2001_count"));
  EXPECT_EQ(1, Number(vars, m + "errno_1003_count"));
  EXPECT_GT(Number(vars, m + "latency_sum_us"), 0);
  EXPECT_GT(Number(vars, m + "qps"), 0);
  const double p50 = Number(vars, m + "latency_p50_us"), p90 = Number(vars, m + "latency_p90_us"),
               p99 = Number(vars, m + "latency_p99_us"), p999 = Number(vars, m + "latency_p999_us"),
               max = Number(vars, m + "latency_max_us");
  EXPECT_GT(p50, 0);
  EXPECT_LE(p50, p90);
  EXPECT_LE(p90, p99);
  EXPECT_LE(p99, p999);
  EXPECT_LE(p999, max);
  EXPECT_LE(max * calls, Number(vars, m + "latency_sum_us") * calls);  // max <= sum
  // Memory fields: every MemoryStats field, plus arena_bytes.
  for (const char* field : {"acquired", "released", "page_allocations", "page_cache_hits",
                            "page_cache_misses", "pages_cached", "pages_outstanding", "reuses",
                            "rebuilds", "trims", "objects_pooled", "retained_bytes_estimate",
                            "requests_shaped", "responses_mirrored", "calls_on_arena",
                            "arena_bytes"}) {
    EXPECT_TRUE(vars.count(m + "memory_" + field)) << field;
  }
  // The unparsable request was acquired too (then released unused).
  EXPECT_GE(Number(vars, m + "memory_acquired"), calls + 1);
  const std::string mode = GetParam();
  if (mode == "arena" || mode == "paged") {
    EXPECT_GT(Number(vars, m + "memory_arena_bytes"), 0);
  } else if (mode == "reuse") {  // the first call is pooled; the next, small, on reuse's arena
    EXPECT_GT(Number(vars, m + "memory_arena_bytes"), 0);
    EXPECT_GT(Number(vars, m + "memory_calls_on_arena"), 0);
  } else {
    EXPECT_EQ(0, Number(vars, m + "memory_arena_bytes"));
  }
  // The strategy's totals, once, under its own name; the page pool is the strategy's alone, and
  // a method's own counters are a share of the totals (the test service has two methods).
  const std::string strategy = "rpc_server_strategy_" + mode + "_";
  EXPECT_GE(Number(vars, strategy + "methods"), 1);
  EXPECT_GE(Number(vars, strategy + "memory_acquired"), Number(vars, m + "memory_acquired"));
  if (mode == "paged") {
    EXPECT_GT(Number(vars, strategy + "memory_page_allocations"), 0);
    EXPECT_EQ(0, Number(vars, m + "memory_page_allocations"));
  }
  if (mode == "reuse") {
    EXPECT_GT(Number(vars, m + "memory_objects_pooled"), 0);
  }
  // The server and the process.
  EXPECT_EQ(calls + 1, Number(vars, "rpc_server_requests"));
  EXPECT_EQ(0, Number(vars, "rpc_server_malformed_frames"));
  EXPECT_EQ(2, Number(vars, "rpc_server_connection_count"));  // the channel's and the raw one's
  EXPECT_GT(Number(vars, "process_cpu_usage_us"), 0);
  EXPECT_GT(Number(vars, "process_rss_bytes"), 1 << 20);
  EXPECT_GE(Number(vars, "process_fd_count"), 4);   // stdio + the listening socket
  EXPECT_GE(Number(vars, "process_thread_count"), 3);  // main + 2 server threads
}

TEST_P(PagesTest, VarsFilterByPrefixInTheQueryOrThePath) {
  MakeCalls();
  const auto all = Vars();
  const auto by_query = Vars({{"prefix", "process_"}});
  const auto by_path = Vars({}, "/vars/process_");
  EXPECT_EQ(6u, by_query.size());
  for (const auto& [name, value] : by_query) EXPECT_TRUE(name.starts_with("process_")) << name;
  std::vector<std::string> query_names, path_names;
  for (const auto& [name, value] : by_query) query_names.push_back(name);
  for (const auto& [name, value] : by_path) path_names.push_back(name);
  EXPECT_EQ(query_names, path_names);
  EXPECT_GT(all.size(), by_query.size() + 40);
  EXPECT_TRUE(Vars({{"prefix", "no_such_var"}}).empty());
}

TEST_P(PagesTest, StatusJsonDescribesEveryMethod) {
  MakeCalls();
  const BuiltinReply reply = Get("/status", {{"format", "json"}});
  EXPECT_EQ("application/json", reply.content_type);
  google::protobuf::Struct status;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(reply.body, &status).ok()) << reply.body;
  const auto& methods = status.fields().at("methods").list_value().values();
  ASSERT_EQ(2, methods.size());  // Echo, Echo2
  const auto& echo = methods[0].struct_value().fields();
  EXPECT_EQ(kEcho, echo.at("name").string_value());
  EXPECT_EQ(kGoodCalls + kFailedCalls, echo.at("calls").number_value());
  EXPECT_EQ(kFailedCalls, echo.at("errors_by_code").struct_value().fields().at("2001").number_value());
  const auto& last10 = echo.at("last_10s").struct_value().fields();
  EXPECT_EQ(kGoodCalls + kFailedCalls, last10.at("calls").number_value());
  EXPECT_GT(last10.at("qps").number_value(), 0);
  EXPECT_GT(last10.at("p99_us").number_value(), 0);
  EXPECT_EQ(60, echo.at("calls_per_second_last_60s").list_value().values_size());
  EXPECT_EQ(GetParam(), echo.at("memory").struct_value().fields().at("strategy").string_value());
  const auto& server = status.fields().at("server").struct_value().fields();
  EXPECT_EQ(kGoodCalls + kFailedCalls + 1, server.at("requests").number_value());
  EXPECT_GT(status.fields().at("process").struct_value().fields().at("rss_bytes").number_value(), 0);
  const auto& echo2 = methods[1].struct_value().fields();
  EXPECT_EQ(0, echo2.at("calls").number_value());
}

TEST_P(PagesTest, StatusHtmlIsSelfContained) {
  MakeCalls();
  const BuiltinReply reply = Get("/status");
  EXPECT_EQ(200, reply.status);
  EXPECT_EQ("text/html; charset=utf-8", reply.content_type);
  const std::string& html = reply.body;
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>"));
  EXPECT_NE(std::string::npos, html.find("<h2>arenarpc.e2e.TestService.Echo</h2>"));
  EXPECT_NE(std::string::npos, html.find("<svg"));
  EXPECT_NE(std::string::npos, html.find("2001 "));  // the error code row
  EXPECT_NE(std::string::npos, html.find(">" + std::string(GetParam()) + "<"));
  EXPECT_EQ(std::string::npos, html.find("http://"));
  EXPECT_EQ(std::string::npos, html.find("https://"));
  EXPECT_EQ(std::string::npos, html.find("<script"));
}

TEST_P(PagesTest, ConnectionsListsTheOpenConnections) {
  MakeCalls();  // leaves the channel's connection and a raw one open
  BuiltinReply reply;
  google::protobuf::Struct json;
  for (int i = 0; i < 500; ++i) {
    reply = Get("/connections", {{"format", "json"}});
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(reply.body, &json).ok()) << reply.body;
    if (json.fields().at("count").number_value() == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(2, json.fields().at("count").number_value()) << reply.body;
  for (const auto& value : json.fields().at("connections").list_value().values()) {
    const auto& c = value.struct_value().fields();
    EXPECT_TRUE(c.at("remote").string_value().starts_with("127.0.0.1:"));
    EXPECT_EQ("127.0.0.1:" + std::to_string(port_), c.at("local").string_value());
    EXPECT_EQ("baidu_std", c.at("protocol").string_value());
    EXPECT_GE(c.at("age_seconds").number_value(), 0);
  }
  const std::string text = Get("/connections").body;
  EXPECT_NE(std::string::npos, text.find("2 connection(s)"));
  EXPECT_NE(std::string::npos, text.find("127.0.0.1:" + std::to_string(port_)));
}

TEST_P(PagesTest, MemoryShowsTheStrategyAndArenaBytesPerCall) {
  MakeCalls();
  const BuiltinReply reply = Get("/memory", {{"format", "json"}});
  google::protobuf::Struct json;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(reply.body, &json).ok()) << reply.body;
  const auto& echo = json.fields().at("methods").struct_value().fields().at(kEcho).struct_value().fields();
  const std::string mode = GetParam();
  EXPECT_EQ(mode, echo.at("strategy").string_value());
  const double per_call = echo.at("arena_bytes_per_call").number_value();
  if (mode == "arena" || mode == "paged") {
    EXPECT_GE(per_call, 256);   // at least the first block
    EXPECT_EQ(kGoodCalls + kFailedCalls, echo.at("arena_calls").number_value());
  } else if (mode == "reuse") {  // small calls: on reuse's paged arena after the first
    EXPECT_GE(per_call, 256);
    EXPECT_GT(echo.at("calls_on_arena").number_value(), 0);
    EXPECT_LT(echo.at("calls_on_arena").number_value(), kGoodCalls + kFailedCalls + 1);
  } else {
    EXPECT_EQ(0, per_call);
  }
  if (mode == "reuse") {
    EXPECT_GT(echo.at("objects_pooled").number_value(), 0);
    EXPECT_GT(echo.at("retained_bytes_estimate").number_value(), 0);
  }
  // The page pool is the strategy's: in its totals, listed once.
  const auto& strategies = json.fields().at("strategies").list_value();
  ASSERT_EQ(1, strategies.values_size()) << reply.body;
  const auto& totals = strategies.values(0).struct_value().fields();
  EXPECT_EQ(mode, totals.at("strategy").string_value());
  if (mode == "paged") {
    EXPECT_EQ(
        0, echo.at("page_cache_hits").number_value() + echo.at("page_cache_misses").number_value());
    EXPECT_GT(
        totals.at("page_cache_hits").number_value() + totals.at("page_cache_misses").number_value(),
        0);
  }
  const std::string text = Get("/memory").body;
  EXPECT_NE(std::string::npos, text.find("  strategy = " + mode + "\n"));
  EXPECT_NE(std::string::npos, text.find("strategy " + mode + " (totals of its methods: "));
}

// Echo and Echo2 share the server's strategy; only Echo is called. Each method shows its own
// pairs; the strategy's totals are shown once, with both methods named.
TEST_P(PagesTest, MemoryCountersAreEachMethodsOwn) {
  MakeCalls();
  constexpr char kEcho2[] = "arenarpc.e2e.TestService.Echo2";
  const auto method_json = [&](const std::string& path, auto&& find) {
    const BuiltinReply reply = Get(path, {{"format", "json"}});
    google::protobuf::Struct json;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(reply.body, &json).ok()) << reply.body;
    return find(json);
  };
  const auto from_memory = [&](const char* name) {
    return method_json("/memory", [&](const google::protobuf::Struct& json) {
      return json.fields().at("methods").struct_value().fields().at(name).struct_value();
    });
  };
  const auto from_status = [&](const char* name) {
    return method_json("/status", [&](const google::protobuf::Struct& json) {
      for (const auto& m : json.fields().at("methods").list_value().values()) {
        if (m.struct_value().fields().at("name").string_value() == name) {
          return m.struct_value().fields().at("memory").struct_value();
        }
      }
      ADD_FAILURE() << name << " not on /status";
      return google::protobuf::Struct();
    });
  };
  const std::string mode = GetParam();
  for (const auto& get : {std::function<google::protobuf::Struct(const char*)>(from_memory),
                          std::function<google::protobuf::Struct(const char*)>(from_status)}) {
    const auto echo = get(kEcho).fields();
    const auto echo2 = get(kEcho2).fields();
    EXPECT_GE(echo.at("acquired").number_value(), kGoodCalls + kFailedCalls);
    EXPECT_EQ(echo.at("acquired").number_value(), echo.at("released").number_value());
    for (const char* field : {"acquired", "released", "requests_shaped", "responses_mirrored",
                              "calls_on_arena", "arena_calls", "page_allocations"}) {
      EXPECT_EQ(0, echo2.at(field).number_value()) << field;
    }
    // Pools are per message type: the two methods' types are the same, so are their pools.
    EXPECT_EQ(echo.at("objects_pooled").number_value(), echo2.at("objects_pooled").number_value());
  }
  const BuiltinReply reply = Get("/memory", {{"format", "json"}});
  google::protobuf::Struct json;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(reply.body, &json).ok());
  const auto& strategies = json.fields().at("strategies").list_value();
  ASSERT_EQ(1, strategies.values_size());
  const auto& totals = strategies.values(0).struct_value().fields();
  const auto& methods = totals.at("methods").list_value();
  ASSERT_EQ(2, methods.values_size());
  EXPECT_EQ(kEcho, methods.values(0).string_value());
  EXPECT_EQ(kEcho2, methods.values(1).string_value());
  EXPECT_EQ(from_memory(kEcho).fields().at("acquired").number_value(),
            totals.at("acquired").number_value());
}

TEST_P(PagesTest, FlagsShowTheEffectiveOptions) {
  const std::string text = Get("/flags").body;
  EXPECT_NE(std::string::npos, text.find("max_concurrency = 77\n"));
  EXPECT_NE(std::string::npos, text.find("read_timeout_ms = 4321\n"));
  EXPECT_NE(std::string::npos, text.find("memory_mode = " + std::string(GetParam()) + "\n"));
  EXPECT_NE(std::string::npos, text.find("num_threads = 2\n"));
}

TEST_P(PagesTest, PagesAreReadOnly) {
  for (const char* path : {"/status", "/vars", "/metrics", "/connections", "/memory", "/flags"}) {
    BuiltinRequest request;
    request.method = "POST";
    request.path = path;
    BuiltinReply reply;
    (*registry_.Find(path))(request, &reply);
    EXPECT_EQ(405, reply.status) << path;
  }
}

TEST_P(PagesTest, PagesAnswer503OnceTheServerIsGone) {
  server_.reset();
  EXPECT_EQ(503, Get("/status").status);
  EXPECT_EQ(503, Get("/vars").status);
}

// The real promtool accepts the exposition, and its values match the calls.
TEST_P(PagesTest, MetricsPassPromtoolAndCountTheCalls) {
  MakeCalls();
  const BuiltinReply reply = Get("/metrics");
  EXPECT_EQ("text/plain; version=0.0.4; charset=utf-8", reply.content_type);
  const std::string& text = reply.body;
  const std::string method = "method=\"" + std::string(kEcho) + "\"";
  EXPECT_NE(std::string::npos,
            text.find("arenarpc_server_calls_total{" + method + "} " +
                      std::to_string(kGoodCalls + kFailedCalls) + "\n"))
      << text.substr(0, 2000);
  EXPECT_NE(std::string::npos, text.find("arenarpc_server_errors_total{code=\"2001\"," + method +
                                         "} " + std::to_string(kFailedCalls) + "\n"));
  EXPECT_NE(std::string::npos, text.find("arenarpc_server_latency_seconds_count{" + method + "} " +
                                         std::to_string(kGoodCalls + kFailedCalls) + "\n"));
  EXPECT_NE(std::string::npos, text.find("arenarpc_server_latency_seconds_bucket{" + method +
                                         ",le=\"+Inf\"} " +
                                         std::to_string(kGoodCalls + kFailedCalls) + "\n"));
  EXPECT_NE(std::string::npos, text.find("process_cpu_seconds_total "));
  EXPECT_NE(std::string::npos, text.find("process_resident_memory_bytes "));
  EXPECT_NE(std::string::npos, text.find("process_open_fds "));
  EXPECT_NE(std::string::npos, text.find("arenarpc_server_connections 2\n"));
  EXPECT_NE(std::string::npos,
            text.find("arenarpc_memory_acquired_total{" + method + ",strategy=\"" +
                      std::string(GetParam()) + "\"}"));
  // The strategy's totals once, labelled with its name only.
  EXPECT_NE(std::string::npos, text.find("arenarpc_strategy_memory_acquired_total{strategy=\"" +
                                         std::string(GetParam()) + "\"}"));

  if (!std::filesystem::exists("/usr/bin/promtool")) GTEST_FAIL() << "/usr/bin/promtool missing";
  const auto dir = std::filesystem::temp_directory_path() /
                   ("arenarpc_promtool_" + std::to_string(::getpid()) + "_" + GetParam());
  std::filesystem::create_directories(dir);
  const auto metrics = dir / "metrics.txt", output = dir / "promtool.out";
  std::ofstream(metrics) << text;
  const std::string command = "timeout 30 /usr/bin/promtool check metrics < '" + metrics.string() +
                              "' > '" + output.string() + "' 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream in(output);
  const std::string said((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove_all(dir);
  EXPECT_EQ(0, status) << "promtool check metrics: " << said;
}

// The server's own port serves the same pages over HTTP.
TEST_P(PagesTest, TheServersPortServesThePagesOverHttp) {
  MakeCalls();
  int status = 0;
  const auto vars = HttpGet(port_, "/vars?prefix=" + std::string(kEchoVar) + "count", &status);
  ASSERT_TRUE(vars.has_value());
  EXPECT_EQ(200, status);
  EXPECT_EQ(std::string(kEchoVar) + "count : " + std::to_string(kGoodCalls + kFailedCalls) + "\n",
            *vars);
  const auto metrics = HttpGet(port_, "/metrics", &status);
  ASSERT_TRUE(metrics.has_value());
  EXPECT_EQ(200, status);
  EXPECT_NE(std::string::npos, metrics->find("arenarpc_server_calls_total")) << *metrics;
  const auto missing = HttpGet(port_, "/no/such/page", &status);
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(404, status);
}

INSTANTIATE_TEST_SUITE_P(Modes, PagesTest, ::testing::ValuesIn(e2e::kAllModes));

// GetMethodStats reports the windows, errors by code and the most handlers at once.
using WindowStatsTest = e2e::ServerTest;

void CountDone(std::atomic<int>* count) { count->fetch_add(1); }

TEST_P(WindowStatsTest, MethodStatsCarryWindowsErrorsAndConcurrency) {
  StartServer();
  auto channel = MakeChannel();
  TestService_Stub stub(channel.get());
  // Four calls whose handlers finish from another thread 200 ms later: in flight together.
  constexpr int kParallel = 4;
  Controller controllers[kParallel];
  TestRequest requests[kParallel];
  TestResponse responses[kParallel];
  std::atomic<int> done_count{0};
  for (int i = 0; i < kParallel; ++i) {
    requests[i].set_message("slow");
    requests[i].set_delay_ms(200);
    stub.Echo(&controllers[i], &requests[i], &responses[i],
              NewCallback(&CountDone, &done_count));
  }
  for (int i = 0; i < 1000 && done_count.load() < kParallel; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(kParallel, done_count.load());
  Controller failing;
  TestRequest request;
  request.set_message("x");
  request.set_fail_code(4242);
  TestResponse response;
  stub.Echo(&failing, &request, &response, nullptr);
  ASSERT_TRUE(failing.Failed());

  const MethodStats stats = server_->GetMethodStats(kEcho);
  EXPECT_EQ(kParallel + 1u, stats.calls);
  EXPECT_EQ(kParallel, stats.max_in_flight);
  EXPECT_EQ(0, stats.in_flight);
  EXPECT_EQ(kParallel + 1u, stats.last_10s.calls);
  EXPECT_EQ(1u, stats.last_10s.errors);
  EXPECT_EQ(kParallel + 1u, stats.last_60s.calls);
  EXPECT_GT(stats.last_10s.qps, 0);
  EXPECT_GE(stats.last_10s.latency_max_us, 200000);   // the delayed calls
  EXPECT_GE(stats.last_10s.latency_p50_us, 190000);   // 4 of 5 calls took 200 ms
  EXPECT_GE(stats.latency_sum_us, uint64_t{kParallel} * 200000);
  ASSERT_EQ(1u, stats.errors_by_code.size());
  EXPECT_EQ(0, stats.errors_by_code[0].code);  // 4242 is not one of brpc's codes: "other"
  EXPECT_EQ(1u, stats.errors_by_code[0].count);
}

INSTANTIATE_TEST_SUITE_P(Modes, WindowStatsTest, ::testing::Values("heap", "paged"));

}  // namespace
}  // namespace arenarpc::builtin
