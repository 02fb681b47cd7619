// The /vars text parser and the server's view of a window computed from two readings.
#include "press/server_vars.h"

#include <gtest/gtest.h>

#include "press/press_result.h"

namespace arenarpc::press {
namespace {

constexpr std::string_view kBefore =
    "process_cpu_usage_us : 1000000\n"
    "process_rss_bytes : 52428800\n"
    "rpc_server_arenarpc_e2e_TestService_Echo_count : 100\n"
    "rpc_server_arenarpc_e2e_TestService_Echo_error_count : 2\n"
    "rpc_server_arenarpc_e2e_TestService_Echo_latency_sum_us : 25000\n"
    "rpc_server_arenarpc_e2e_TestService_Echo_latency_p99_us : 900\n"
    "rpc_server_arenarpc_e2e_TestService_Echo_memory_acquired : 100\n"
    "rpc_server_arenarpc_e2e_TestService_Echo_memory_reuses : 90\n"
    "rpc_server_arenarpc_e2e_TestService_Echo_memory_objects_pooled : 3\n"
    "rpc_server_arenarpc_e2e_TestService_Echo2_count : 5\n";

constexpr std::string_view kAfter =
    "# a comment line\n"
    "process_cpu_usage_us : 1600000\r\n"
    "process_rss_bytes : 62914560\n"
    "rpc_server_arenarpc_e2e_TestService_Echo_count : 1100\n"
    "rpc_server_arenarpc_e2e_TestService_Echo_error_count : 12\n"
    "rpc_server_arenarpc_e2e_TestService_Echo_latency_sum_us : 325000\n"
    "rpc_server_arenarpc_e2e_TestService_Echo_latency_p99_us : 450\n"
    "rpc_server_arenarpc_e2e_TestService_Echo_memory_acquired : 1100\n"
    "rpc_server_arenarpc_e2e_TestService_Echo_memory_reuses : 1085\n"
    "rpc_server_arenarpc_e2e_TestService_Echo_memory_objects_pooled : 4\n"
    "rpc_server_arenarpc_e2e_TestService_Echo_memory_retained_bytes_estimate : 81920\n"
    "rpc_server_arenarpc_e2e_TestService_Echo2_count : 500\n"
    "server_version : \"0.1.0\"\n"
    "malformed line without separator\n"
    "  padded_name   :   2.5  \n";

TEST(ServerVars, ParsesNameColonValueLines) {
  const VarsMap vars = ParseVars(kAfter);
  EXPECT_EQ(vars.at("process_cpu_usage_us"), 1600000);  // "\r\n" line ending
  EXPECT_EQ(vars.at("padded_name"), 2.5);
  EXPECT_EQ(vars.count("server_version"), 0u);           // not a number: skipped
  EXPECT_EQ(vars.count("malformed line without separator"), 0u);
  EXPECT_EQ(vars.size(), 12u);
  EXPECT_TRUE(ParseVars("").empty());
}

TEST(ServerVars, MethodNameUsesUnderscores) {
  EXPECT_EQ(VarsMethodName("arenarpc.example.EchoService.Echo"),
            "arenarpc_example_EchoService_Echo");
}

TEST(ServerVars, ViewHasDeltasForCountersAndEndValuesForGauges) {
  const ServerView v =
      ComputeServerView(ParseVars(kBefore), ParseVars(kAfter), "arenarpc.e2e.TestService.Echo");
  ASSERT_TRUE(v.valid) << v.note;
  EXPECT_EQ(v.calls, 1000);
  EXPECT_EQ(v.errors, 10);
  ASSERT_TRUE(v.mean_latency_us.has_value());
  EXPECT_DOUBLE_EQ(*v.mean_latency_us, 300);  // (325000 - 25000) / 1000
  EXPECT_EQ(v.latency_p99_us.value_or(-1), 450);
  EXPECT_EQ(v.cpu_us.value_or(-1), 600000);
  EXPECT_EQ(v.cpu_us_per_call.value_or(-1), 600);
  EXPECT_EQ(v.rss_bytes.value_or(-1), 62914560);
  using Fields = std::vector<std::pair<std::string, double>>;
  EXPECT_EQ(v.memory_deltas, (Fields{{"acquired", 1000}, {"reuses", 995}}));
  // retained_bytes_estimate exists only at the end: a gauge needs no "before".
  EXPECT_EQ(v.memory_gauges, (Fields{{"objects_pooled", 4}, {"retained_bytes_estimate", 81920}}));
  // Echo2's vars do not leak into Echo's (a prefix of another method's name).
  const ServerView echo2 =
      ComputeServerView(ParseVars(kBefore), ParseVars(kAfter), "arenarpc.e2e.TestService.Echo2");
  EXPECT_EQ(echo2.calls, 495);
  EXPECT_TRUE(echo2.memory_deltas.empty());
}

TEST(ServerVars, MissingMethodIsANoteNotAView) {
  const ServerView v = ComputeServerView(ParseVars(kBefore), ParseVars(kAfter), "x.Y.Z");
  EXPECT_FALSE(v.valid);
  EXPECT_NE(v.note.find("rpc_server_x_Y_Z_count"), std::string::npos) << v.note;
}

TEST(ServerVars, ReportShowsTheViewInTextAndJson) {
  PressResult r;
  r.options.qps = 10;
  r.server_view_read = true;
  r.server_view =
      ComputeServerView(ParseVars(kBefore), ParseVars(kAfter), "arenarpc.e2e.TestService.Echo");
  const std::string text = FormatText(r);
  EXPECT_NE(text.find("1000 calls, 10 errors, mean latency 300 us, p99 (last 10 s) 450 us, "
                      "cpu 600 us/call, rss 62.9 MB"),
            std::string::npos) << text;
  EXPECT_NE(text.find("memory over the window: acquired=1000 reuses=995"), std::string::npos)
      << text;
  EXPECT_NE(text.find("memory at the end: objects_pooled=4 retained_bytes_estimate=81920"),
            std::string::npos) << text;
  const std::string json = FormatJson(r);
  EXPECT_NE(json.find("\"server_vars\":{\"valid\":true,\"calls\":1000,\"errors\":10,"
                      "\"mean_latency_us\":300,\"latency_p99_us\":450"),
            std::string::npos) << json;
  EXPECT_NE(json.find("\"memory_deltas\":{\"acquired\":1000,\"reuses\":995}"), std::string::npos)
      << json;

  r.server_view = ServerView();
  r.server_view.note = "the server does not answer HTTP";
  EXPECT_NE(FormatText(r).find("server /vars: skipped (the server does not answer HTTP)"),
            std::string::npos);
  EXPECT_NE(FormatJson(r).find("\"server_vars\":{\"valid\":false,\"note\":"), std::string::npos);
}

}  // namespace
}  // namespace arenarpc::press
