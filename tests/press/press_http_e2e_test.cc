// End to end over HTTP: arenarpc_press --protocol http and the /vars reader against a real
// arenarpc server. Needs the server-side HTTP (JSON at POST /pkg.Service/Method, /vars on the RPC
// port), which lands in another branch: built only with -DARENARPC_PRESS_HTTP_E2E=ON.
#include <gtest/gtest.h>

#include <string>

#include "press/server_vars.h"
#include "press/server_vars_fetch.h"
#include "run_shell.h"
#include "temp_dir.h"
#include "test_service_server.h"

namespace arenarpc::press {
namespace {

constexpr const char* kMethod = "arenarpc.e2e.TestService.Echo";

class PressHttpEndToEnd : public TestServiceServer {
 protected:
  TempDir dir_;
};

TEST_F(PressHttpEndToEnd, JsonCallsSucceedAndFailuresCarryTheirCode) {
  const std::string input = dir_.Write("requests.jsonl",
                                       "{\"message\":\"hello\",\"items\":[\"a\"]}\n"
                                       "{\"message\":\"x\",\"fail_code\":5001,\"fail_text\":\"asked to fail\"}\n");
  const ShellOutput r = RunShell(PressCommand(E2E_TEST_PROTO, input, "--protocol=http --check_response"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(JsonNumber(r.out, "calls_ok"), 50) << r.out;
  // x-bd-error-code carries the handler's code.
  EXPECT_NE(r.out.find("{\"code\":5001,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"count\":50,\"sample\":"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("asked to fail"), std::string::npos) << r.out;
}

TEST_F(PressHttpEndToEnd, ServerViewComesFromVars) {
  std::string body, error;
  ASSERT_TRUE(FetchVars(address_, std::chrono::milliseconds(2000), &body, &error)) << error;
  const VarsMap before = ParseVars(body);
  EXPECT_TRUE(before.count("process_cpu_usage_us")) << body;

  const std::string input = dir_.Write("one.json", "{\"message\":\"hello\"}");
  const ShellOutput r = RunShell(PressCommand(E2E_TEST_PROTO, input, "--protocol=baidu_std"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\"server_vars\":{\"valid\":true"), std::string::npos) << r.out;
  // The reads bracket the window only approximately (docs/press.md): how many calls of the
  // warm-up and the tail fall inside depends on how fast a loaded machine answers /vars. So: some
  // calls, and no more than the press sent in all (warm-up included).
  const std::string view = r.out.substr(r.out.find("\"server_vars\":"));
  const std::string attempts = r.out.substr(r.out.find("\"server_attempts\":"));
  EXPECT_GT(JsonNumber(view, "calls"), 0) << r.out;
  EXPECT_LE(JsonNumber(view, "calls"), JsonNumber(attempts, address_)) << r.out;
  EXPECT_GT(JsonNumber(view, "cpu_us_per_call"), 0) << r.out;
  EXPECT_NE(r.out.find("\"memory_deltas\":{"), std::string::npos) << r.out;

  ASSERT_TRUE(FetchVars(address_, std::chrono::milliseconds(2000), &body, &error)) << error;
  const ServerView since_start = ComputeServerView(before, ParseVars(body), kMethod);
  ASSERT_TRUE(since_start.valid) << since_start.note;
  EXPECT_GE(since_start.calls, 100);  // warm-up + window
}

}  // namespace
}  // namespace arenarpc::press
