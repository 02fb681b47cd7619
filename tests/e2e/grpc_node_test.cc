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
#include "stream_unary.h"
#include "test_service.h"

namespace arenarpc::e2e {
namespace {

class GrpcNodeTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GrpcNodeTest, GrpcJsClient) {
  ASSERT_EQ(0, access("/usr/bin/node", X_OK)) << "nodejs is a test dependency";
  std::string why;
  const std::string modules =
      NpmModules(ARENARPC_NPM_DIR, {"@grpc/grpc-js@1", "@grpc/proto-loader@0"}, &why);
  if (modules.empty()) GTEST_SKIP() << "npm could not install @grpc/grpc-js: " << why;
  TestServiceImpl echo;
  StreamUnary unary;
  GrpcStreamService streams(StreamService::descriptor(), &unary);
  std::string error;
  ASSERT_EQ(0, streams.AddMethod("ServerStream", [](GrpcServerStream& stream) {
    GrpcStreamMessages in;
    if (!stream.Read(&in)) return;
    const auto& request = in.request<StreamRequest>();
    for (int i = 0; i < request.count(); ++i) {
      GrpcStreamMessages out = stream.NewMessages();
      out.response<StreamReply>().set_text(request.text());
      out.response<StreamReply>().set_index(i);
      if (!stream.Write(std::move(out))) return;
    }
  }, {}, &error)) << error;
  ServerOptions options;
  options.memory_mode = GetParam();
  options.num_threads = 2;
  options.max_body_size = 32u << 20;
  options.max_request_memory = 128u << 20;
  Server server;
  ASSERT_EQ(0, server.AddService(&echo, SERVER_DOESNT_OWN_SERVICE));
  ASSERT_EQ(0, server.AddService(&streams, SERVER_DOESNT_OWN_SERVICE));
  ASSERT_EQ(0, server.Start("127.0.0.1:0", options)) << server.last_error();
  const press::ShellOutput run = press::RunShell(
      "timeout 120 /usr/bin/node " ARENARPC_SOURCE_DIR "/tests/e2e/grpc_node_client.js " +
      std::to_string(server.listen_port()) + " " ARENARPC_SOURCE_DIR "/tests/e2e " + modules);
  EXPECT_EQ(0, run.exit_code) << run.out;
  for (const char* name : {"unary", "metadata", "handler_error", "unimplemented",
                           "deadline_exceeded", "gzip_request", "message_of_8_mib",
                           "server_stream", "concurrent_calls"}) {
    EXPECT_NE(std::string::npos, run.out.find(std::string("OK ") + name + "\n"))
        << name << "\n" << run.out;
  }
  const ServerStats stats = server.GetServerStats();
  EXPECT_EQ(0u, stats.malformed_frames) << "the client's calls were gRPC";
  server.Stop(0);
  server.Join();
}

INSTANTIATE_TEST_SUITE_P(Modes, GrpcNodeTest, ::testing::ValuesIn(kAllModes));

}  // namespace
}  // namespace arenarpc::e2e
