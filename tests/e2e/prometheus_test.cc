// A real Prometheus (/usr/bin/prometheus, Debian's `prometheus`) scrapes the server's /metrics
// every second; the test asks Prometheus's HTTP API for arenarpc's series and checks them against
// the calls it made. Loopback only, a temporary directory, free ports, hard deadlines; Prometheus
// is always stopped.
// Prometheus scrapes the server's own port. Off with cmake -DARENARPC_PROMETHEUS_TESTS=OFF.

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../free_port.h"
#include "child_process.h"
#include "http_get.h"
#include "server_fixture.h"

namespace arenarpc::builtin {
namespace {

using e2e::TestRequest;
using e2e::TestResponse;
using e2e::TestService_Stub;


std::string UrlEncode(std::string_view text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '_' || c == '-' || c == '.') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

class PrometheusTest : public e2e::ServerTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists("/usr/bin/prometheus"))
        << "ARENARPC_PROMETHEUS_TESTS needs /usr/bin/prometheus (Debian: prometheus)";
    StartServer();
    dir_ = std::filesystem::temp_directory_path() /
           ("arenarpc_prometheus_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "prometheus.yml")
        << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        << "scrape_configs:\n  - job_name: arenarpc\n    metrics_path: /metrics\n"
        << "    static_configs:\n      - targets: ['127.0.0.1:" << port_ << "']\n";
    prometheus_port_ = arenarpc::testing::FreePort();
    prometheus_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{"/usr/bin/prometheus",
                                 "--config.file=" + (dir_ / "prometheus.yml").string(),
                                 "--storage.tsdb.path=" + (dir_ / "data").string(),
                                 "--web.listen-address=127.0.0.1:" +
                                     std::to_string(prometheus_port_),
                                 "--log.level=warn"},
        (dir_ / "prometheus.log").string());
    ASSERT_TRUE(prometheus_->started());
  }

  void TearDown() override {
    prometheus_.reset();  // stops Prometheus before its files go
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
    ServerTest::TearDown();
  }

  // The value of an instant query's only sample, or nullopt while there is none.
  std::optional<double> Query(const std::string& promql) {
    int status = 0;
    const auto body =
        HttpGet(prometheus_port_, "/api/v1/query?query=" + UrlEncode(promql), &status);
    if (!body || status != 200) return std::nullopt;
    google::protobuf::Struct reply;
    if (!google::protobuf::util::JsonStringToMessage(*body, &reply).ok()) return std::nullopt;
    const auto& result = reply.fields().at("data").struct_value().fields().at("result").list_value();
    if (result.values_size() != 1) return std::nullopt;
    const auto& value = result.values(0).struct_value().fields().at("value").list_value();
    return std::stod(value.values(1).string_value());
  }

  // Waits (at most 30 s) until `promql` reads `expected`; returns what it read last.
  std::optional<double> WaitFor(const std::string& promql, double expected) {
    std::optional<double> seen;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline && prometheus_->running()) {
      seen = Query(promql);
      if (seen && *seen == expected) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return seen;
  }

  void Calls(int n, int fail_code) {
    if (!channel_) channel_ = MakeChannel();
    TestService_Stub stub(channel_.get());
    for (int i = 0; i < n; ++i) {
      Controller controller;
      TestRequest request;
      request.set_message("hello");
      if (fail_code != 0) request.set_fail_code(fail_code);
      TestResponse response;
      stub.Echo(&controller, &request, &response, nullptr);
      ASSERT_EQ(fail_code != 0, controller.Failed());
    }
  }

  std::string PrometheusLog() const {
    std::ifstream in(dir_ / "prometheus.log");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

  std::unique_ptr<ChildProcess> prometheus_;
  std::unique_ptr<Channel> channel_;
  std::filesystem::path dir_;
  int prometheus_port_ = 0;
};

TEST_P(PrometheusTest, PrometheusScrapesTheCallsTheServerServed) {
  Calls(40, 0);
  Calls(7, 2001);
  const std::string method = "{method=\"arenarpc.e2e.TestService.Echo\"}";
  EXPECT_EQ(1.0, WaitFor("up{job=\"arenarpc\"}", 1.0)) << PrometheusLog();
  EXPECT_EQ(47.0, WaitFor("arenarpc_server_calls_total" + method, 47.0)) << PrometheusLog();
  EXPECT_EQ(7.0, WaitFor("arenarpc_server_errors_total{method=\"arenarpc.e2e.TestService.Echo\","
                         "code=\"2001\"}",
                         7.0));
  EXPECT_EQ(47.0, WaitFor("arenarpc_server_latency_seconds_count" + method, 47.0));
  EXPECT_EQ(47.0, WaitFor("sum(arenarpc_server_latency_seconds_bucket{le=\"+Inf\","
                          "method=\"arenarpc.e2e.TestService.Echo\"})",
                          47.0));
  const auto cpu = Query("process_cpu_seconds_total{job=\"arenarpc\"}");
  ASSERT_TRUE(cpu.has_value());
  EXPECT_GT(*cpu, 0);
  const auto acquired = Query("arenarpc_memory_acquired_total{method=\"arenarpc.e2e.TestService."
                              "Echo\",strategy=\"" + std::string(GetParam()) + "\"}");
  ASSERT_TRUE(acquired.has_value());
  EXPECT_GE(*acquired, 47);
  // Later calls reach Prometheus with the next scrapes.
  Calls(13, 0);
  EXPECT_EQ(60.0, WaitFor("arenarpc_server_calls_total" + method, 60.0));
}

INSTANTIATE_TEST_SUITE_P(Modes, PrometheusTest, ::testing::Values("paged"));

}  // namespace
}  // namespace arenarpc::builtin
