// Node's @grpc/grpc-js (npm, installed into the build tree by the test) against an arenarpc
// server: unary calls, metadata, error statuses and their text, unknown methods, deadlines, gzip,
// an 8 MiB message, a server stream, 100 concurrent calls — in every memory strategy.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "../press/run_shell.h"
#include "npm_modules.h"
#include "arenarpc/fiber.h"
#include "arenarpc/grpc_stream.h"
#include "arenarpc/server.h"
#include "grpc_stream_test.pb.h"
#include "server_fixture.h"
#include "stream_test_server.h"

namespace arenarpc::e2e {
namespace {

class GrpcNodeTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GrpcNodeTest, GrpcJsClient) {
  ASSERT_EQ(0, access("/usr/bin/node", X_OK)) << "nodejs is a test dependency";
  std::string why;
  const std::string modules =
      NpmModules(ARENARPC_NPM_DIR, {"@grpc/grpc-js@1", "@grpc/proto-loader@0"}, &why);
  if (modules.empty()) GTEST_SKIP() << "npm could not install @grpc/grpc-js: " << why;
  ServerOptions options;
  options.memory_mode = GetParam();
  options.num_threads = 2;
  options.max_body_size = 32u << 20;
  options.max_request_memory = 128u << 20;
  StreamTestServer test_server;
  ASSERT_EQ("", test_server.Start(options));
  Server& server = test_server.server();
  const press::ShellOutput run = press::RunShell(
      "timeout 120 /usr/bin/node " ARENARPC_SOURCE_DIR "/tests/e2e/grpc_node_client.js " +
      test_server.port() + " " ARENARPC_SOURCE_DIR "/tests/e2e " + modules);
  EXPECT_EQ(0, run.exit_code) << run.out;
  for (const char* name : {"unary", "metadata", "handler_error", "unimplemented",
                           "deadline_exceeded", "gzip_request", "message_of_8_mib",
                           "server_stream", "concurrent_calls"}) {
    EXPECT_NE(std::string::npos, run.out.find(std::string("OK ") + name + "\n"))
        << name << "\n" << run.out;
  }
  const ServerStats stats = server.GetServerStats();
  EXPECT_EQ(0u, stats.malformed_frames) << "the client's calls were gRPC";
}

INSTANTIATE_TEST_SUITE_P(Modes, GrpcNodeTest, ::testing::ValuesIn(kAllModes));

}  // namespace
}  // namespace arenarpc::e2e
