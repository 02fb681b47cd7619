// End to end: arenarpc_press --proto --method --input against a real arenarpc server (baidu_std)
// serving the e2e TestService, with and without --check_response; and the messages of bad input.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "run_shell.h"
#include "temp_dir.h"
#include "test_service_server.h"

namespace arenarpc::press {
namespace {

constexpr const char* kMethod = "arenarpc.e2e.TestService.Echo";

class PressMethodEndToEnd : public TestServiceServer {
 protected:
  TempDir dir_;
};

TEST_F(PressMethodEndToEnd, CyclesTheInputAndChecksResponses) {
  // Every other call asks the handler to fail with code 5001: the server decoded what was sent,
  // and the input is cycled in order.
  const std::string input = dir_.Write("requests.jsonl",
                                       "{\"message\":\"hello\",\"items\":[\"a\",\"b\"]}\n"
                                       "{\"message\":\"x\",\"fail_code\":5001,\"fail_text\":\"asked to fail\"}\n");
  const ShellOutput r = RunShell(PressCommand(E2E_TEST_PROTO, input, "--check_response"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(JsonNumber(r.out, "calls_ok"), 50) << r.out;
  EXPECT_EQ(JsonNumber(r.out, "calls_failed"), 50) << r.out;
  EXPECT_NE(r.out.find("{\"code\":5001,\"name\":\"code 5001\",\"count\":50,\"sample\":"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("asked to fail\"}"), std::string::npos) << r.out;
  EXPECT_EQ(JsonNumber(r.out, "input_requests"), 2) << r.out;
  EXPECT_NE(r.out.find("\"check_response\":true"), std::string::npos) << r.out;
  // Warm-up calls reached the handler too.
  EXPECT_GE(service_.handler_calls(), 100);
}

TEST_F(PressMethodEndToEnd, ResponseCheckCountsResponsesOfAnotherType) {
  // The same method declared with a narrower TestResponse: every reply carries log_id (field 3),
  // which this TestResponse does not declare.
  const std::string proto = dir_.Write("narrow/e2e_test.proto", R"(syntax = "proto2";
package arenarpc.e2e;
message TestRequest { required string message = 1; repeated string items = 2; }
message TestResponse { required string message = 1; }
service TestService { rpc Echo(TestRequest) returns (TestResponse); }
)");
  const std::string input = dir_.Write("one.json", "{\"message\": \"hi\"}");
  ShellOutput r = RunShell(PressCommand(proto, input, "--check_response --qps=100"));
  EXPECT_EQ(r.exit_code, 1) << r.out;  // no call passed
  EXPECT_EQ(JsonNumber(r.out, "calls_ok"), 0) << r.out;
  EXPECT_NE(r.out.find("\"name\":\"RESPONSE_MISMATCH\",\"count\":50"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("<unknown field 3>"), std::string::npos) << r.out;
  // Unchecked, the same replies are successes (they are not parsed by type).
  r = RunShell(PressCommand(proto, input, "--qps=100"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(JsonNumber(r.out, "calls_ok"), 50) << r.out;
  EXPECT_EQ(JsonNumber(r.out, "calls_failed"), 0) << r.out;
}

TEST_F(PressMethodEndToEnd, BadInputFailsFastNamingTheFlag) {
  const std::string good = dir_.Write("good.json", "{\"message\":\"a\"}\n");
  const std::string bad_line = dir_.Write("bad.json", "{\"message\":\"a\"}\n{\"message\":}\n");
  const std::string empty = dir_.Write("empty.json", "\n");
  const std::string broken = dir_.Write("broken.proto", "syntax = \"proto3\";\nmessage {\n");
  const std::string press = std::string(PRESS_BIN) + " --server=" + address_ + " --qps=10 ";
  struct Case {
    std::string args, message;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"--proto=" E2E_TEST_PROTO " --method=arenarpc.e2e.TestService.Nope --input=" + good,
            "--method: service 'arenarpc.e2e.TestService' has no method 'Nope'"},
           {"--proto=" + broken + " --method=a.B.C --input=" + good, "broken.proto:2:"},
           {"--proto=" E2E_TEST_PROTO " --method=" + std::string(kMethod) + " --input=" + bad_line,
            "--input: " + bad_line + ": line 2:"},
           {"--proto=" E2E_TEST_PROTO " --method=" + std::string(kMethod) + " --input=" + empty,
            "no request (the input is empty)"},
           {"--proto=" E2E_TEST_PROTO " --method=" + std::string(kMethod),
            "--input is missing"},
           {"--check_response", "--check_response needs --method"},
       }) {
    const ShellOutput r = RunShell(press + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << c.args << "\n" << r.out;
  }
}

}  // namespace
}  // namespace arenarpc::press
