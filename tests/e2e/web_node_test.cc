// Node's @connectrpc/connect-node (npm, installed into the build tree by the test) against an
// arenarpc server through its gRPC-web and Connect transports (JSON and binary) over HTTP/1.1:
// unary calls, metadata, error codes and text, unknown methods, a 1 MiB message, 50 concurrent
// calls, a 300-message server stream and one that fails after 3 messages — in every memory
// strategy.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "../press/run_shell.h"
#include "arenarpc/grpc_stream.h"
#include "arenarpc/server.h"
#include "grpc_stream_test.pb.h"
#include "npm_modules.h"
#include "server_fixture.h"
#include "stream_test_server.h"

namespace arenarpc::e2e {
namespace {

class WebNodeTest : public ::testing::TestWithParam<const char*> {};

TEST_P(WebNodeTest, ConnectNodeClient) {
  ASSERT_EQ(0, access("/usr/bin/node", X_OK)) << "nodejs is a test dependency";
  std::string why;
  const std::string modules = NpmModules(
      ARENARPC_NPM_DIR,
      {"@connectrpc/connect@1", "@connectrpc/connect-node@1", "@bufbuild/protobuf@1"}, &why);
  if (modules.empty()) GTEST_SKIP() << "npm could not install @connectrpc/connect-node: " << why;
  ServerOptions options;
  options.memory_mode = GetParam();
  options.num_threads = 2;
  StreamTestServer test_server;
  ASSERT_EQ("", test_server.Start(options));
  Server& server = test_server.server();
  const press::ShellOutput run = press::RunShell(
      "timeout 120 /usr/bin/node " ARENARPC_SOURCE_DIR "/tests/e2e/web_node_client.js " +
      test_server.port() + " " + modules + " 1.1");
  EXPECT_EQ(0, run.exit_code) << run.out;
  for (const char* transport : {"grpc-web", "connect-json", "connect-proto"}) {
    for (const char* name : {"unary", "metadata", "handler_error", "unimplemented",
                             "message_of_1_mib", "concurrent_calls", "server_stream",
                             "server_stream_error"}) {
      const std::string line = std::string("OK ") + transport + " " + name + "\n";
      EXPECT_NE(std::string::npos, run.out.find(line)) << line << run.out;
    }
  }
  const MethodStats stats = server.GetMethodStats("arenarpc.e2e.TestService.Echo");
  EXPECT_EQ(3u * (1 + 1 + 1 + 1 + 50), stats.calls);
  EXPECT_EQ(3u, stats.errors) << "the handler_error cases";
  EXPECT_EQ(stats.memory.acquired, stats.memory.released);
}

INSTANTIATE_TEST_SUITE_P(Modes, WebNodeTest, ::testing::ValuesIn(kAllModes));

}  // namespace
}  // namespace arenarpc::e2e
