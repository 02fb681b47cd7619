// The "auto" strategy in a real server: calls over loopback are measured on the server's threads
// (handlers on fibers), the method converges to the candidate known to be cheapest, and the
// choice, the figures and the presence advice show on /memory, /status and /metrics.
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>

#include "arenarpc/channel.h"
#include "arenarpc/controller.h"
#include "arenarpc/server.h"
#include "auto_test_support.h"
#include "echo/echo_service.h"
#include "echo/payload_generator.h"
#include "http_client.h"
#include "memory/strategies.h"

namespace arenarpc::memory {
namespace {

using example::EchoRequest;
using example::EchoResponse;

constexpr char kEcho[] = "arenarpc.example.EchoService.Echo";
// What the slow candidates burn per call: well above a call's own cost, even under TSan.
constexpr uint64_t kBurnNs = 3'000'000;

class AutoServerTest : public ::testing::Test {
 protected:
  void Start(ServerOptions options) {
    options.num_threads = 2;
    ASSERT_EQ(0, server_.AddService(&service_, SERVER_DOESNT_OWN_SERVICE));
    ASSERT_EQ(0, server_.Start("127.0.0.1:0", options)) << server_.last_error();
    ChannelOptions channel_options;
    channel_options.timeout_ms = 10000;
    ASSERT_EQ(
        0, channel_.Init("127.0.0.1:" + std::to_string(server_.listen_port()), &channel_options));
  }

  // `n` echo calls of the workload at payload_scale 1; every reply must echo its request.
  void Calls(int n) {
    example::EchoService_Stub stub(&channel_);
    example::PayloadGenerator generator(1, 11);
    for (int i = 0; i < n; ++i) {
      EchoRequest request;
      generator.Fill(request.mutable_payload());
      EchoResponse response;
      Controller controller;
      stub.Echo(&controller, &request, &response, nullptr);
      ASSERT_FALSE(controller.Failed()) << controller.ErrorText();
      ASSERT_EQ(request.payload().SerializeAsString(), response.payload().SerializeAsString());
    }
  }

  std::string Get(const std::string& path) {
    e2e::HttpClient http(server_.listen_port());
    EXPECT_TRUE(http.Send(e2e::HttpClient::Request("GET", path)));
    auto reply = http.Read();
    EXPECT_TRUE(reply.has_value()) << path;
    return reply ? reply->body : "";
  }

  example::EchoServiceImpl service_;
  Server server_;
  Channel channel_;
};

TEST_F(AutoServerTest, ConvergesToTheCheapestCandidateOnLiveCalls) {
  std::vector<std::shared_ptr<MessageMemory>> candidates = {
      std::make_shared<SlowMemory>("slow_heap", MakeMessageMemory(MemoryMode::kHeap), kBurnNs),
      MakeMessageMemory(MemoryMode::kPaged),
      std::make_shared<SlowMemory>("slow_reuse", MakeMessageMemory(MemoryMode::kReuse), kBurnNs)};
  ServerOptions options;
  options.memory_strategy = MakeAutoMemory(std::move(candidates), QuickAutoSettings());
  Start(options);
  Calls(3 * 10 + 20);
  const MethodStats stats = server_.GetMethodStats(kEcho);
  EXPECT_EQ(stats.memory_mode, "auto");
  ASSERT_TRUE(stats.memory_choice.has_value());
  const MemoryChoice& choice = *stats.memory_choice;
  EXPECT_GE(choice.trials, 1u);
  EXPECT_EQ(choice.chosen, "paged") << choice.reason;
  for (const auto& candidate : choice.candidates) {
    EXPECT_GE(candidate.samples, 8u) << candidate.name;  // measured on the server's fibers
  }
  // Relative figures: sanitizer builds make every call several times slower.
  EXPECT_GE(choice.candidates[0].cpu_ns, kBurnNs);
  EXPECT_GE(choice.candidates[2].cpu_ns, kBurnNs);
  EXPECT_LT(choice.candidates[1].cpu_ns, choice.candidates[0].cpu_ns);
  EXPECT_LT(choice.candidates[1].cpu_ns, choice.candidates[2].cpu_ns);
  EXPECT_GT(choice.candidates[1].held_bytes, 0u);  // the paged arena's bytes
}

TEST_F(AutoServerTest, PagesShowTheChoiceAndThePresenceAdvice) {
  ServerOptions options;
  options.memory_mode = "auto";
  options.memory.automatic = QuickAutoSettings();
  options.memory.automatic.sample_every = 2;
  Start(options);
  Calls(200);  // enough that calls sampled one in 16 for CPU are certain to include some
  const MethodStats stats = server_.GetMethodStats(kEcho);
  ASSERT_TRUE(stats.memory_choice.has_value());
  EXPECT_GE(stats.memory_choice->trials, 1u);
  ASSERT_EQ(stats.presence_advice.size(), 1u);
  EXPECT_EQ(stats.presence_advice[0].field, "arenarpc.example.EchoResponse.payload");
  EXPECT_GT(stats.presence_advice[0].share, 0.5);  // the payload is nearly all of the response

  const std::string json = Get("/memory?format=json");
  EXPECT_NE(json.find("\"chosen\":\"" + stats.memory_choice->chosen + "\""), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"suggested\":\"optional ComplexPayload payload = 2;\""), std::string::npos)
      << json;
  const std::string text = Get("/memory");
  EXPECT_NE(text.find("auto: serving with " + stats.memory_choice->chosen), std::string::npos)
      << text;
  // Each decision so far, the last one leading to the candidate serving now.
  const auto& history = stats.memory_choice->history;
  ASSERT_EQ(history.size(),
            std::min<uint64_t>(stats.memory_choice->trials, MemoryChoice::kHistory));
  EXPECT_EQ(history.back().to, stats.memory_choice->chosen);
  EXPECT_NE(text.find("decisions, oldest first:\n"), std::string::npos) << text;
  EXPECT_NE(text.find(history.back().reason), std::string::npos) << text;
  EXPECT_NE(json.find("\"history\":[{\"unix_ms\":"), std::string::npos) << json;
  EXPECT_NE(text.find("declare it `optional ComplexPayload payload = 2;`"), std::string::npos);
  EXPECT_NE(Get("/status").find("auto: serving with"), std::string::npos);
  // The last 10 minutes: 60 points, the newest holding this test's sampled calls.
  google::protobuf::Struct parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok());
  const auto& series = parsed.fields().at("methods").struct_value().fields().at(kEcho)
                           .struct_value().fields().at("last_10_minutes").list_value();
  ASSERT_EQ(series.values_size(), 60);
  double held_samples = 0, cpu_samples = 0;
  for (const auto& point : series.values()) {
    held_samples += point.struct_value().fields().at("held_samples").number_value();
    cpu_samples += point.struct_value().fields().at("cpu_samples").number_value();
  }
  EXPECT_GT(held_samples, 0);
  EXPECT_GT(cpu_samples, 0);
  const std::string html = Get("/memory?format=html");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("KiB held per call, last 10 min"), std::string::npos);
  EXPECT_NE(html.find("CPU us per call, last 10 min; red lines: decisions of auto"),
            std::string::npos);
  // Each decision (all within this test's last seconds) marked at the charts' right edge.
  size_t marks = 0;
  for (size_t at = html.find("stroke=\"#d33\""); at != std::string::npos;
       at = html.find("stroke=\"#d33\"", at + 1)) {
    ++marks;
  }
  EXPECT_EQ(marks, 2 * history.size());  // on both charts
  const size_t line = html.find("<line x1=\"");
  ASSERT_NE(line, std::string::npos);
  EXPECT_GE(std::stod(html.substr(line + 10, 8)), 0.95 * 240) << html.substr(line, 80);
  EXPECT_NE(html.find("<b>" + stats.memory_choice->chosen + "</b>"), std::string::npos);
  const std::string metrics = Get("/metrics");
  EXPECT_NE(metrics.find("arenarpc_memory_auto_chosen{method=\"" + std::string(kEcho) +
                         "\",strategy=\"" + stats.memory_choice->chosen + "\"} 1"),
            std::string::npos)
      << metrics.substr(0, 4000);
  EXPECT_NE(metrics.find("arenarpc_memory_auto_trials_total"), std::string::npos);
}

}  // namespace
}  // namespace arenarpc::memory
