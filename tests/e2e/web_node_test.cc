// Node's @connectrpc/connect-node (npm, installed into the build tree by the test) against an
// arenarpc server through its gRPC-web and Connect transports (JSON and binary) over HTTP/1.1
// and over HTTP/2:
// unary calls, metadata, error codes and text, a handler's error details, unknown methods, a
// 1 MiB message, 50 concurrent calls, a 300-message server stream and one that fails after 3
// messages — in every memory strategy.
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

class WebNodeTest : public ::testing::TestWithParam<const char*> {
 protected:
  // Runs web_node_client.js over `http_version` with `transports` against a fresh server; its
  // output. Empty and skipped when npm cannot install the client.
  press::ShellOutput RunClient(const std::string& http_version, const std::string& transports,
                               Server** server) {
    std::string why;
    const std::string modules = NpmModules(
        ARENARPC_NPM_DIR,
        {"@connectrpc/connect@1", "@connectrpc/connect-node@1", "@bufbuild/protobuf@1"}, &why);
    if (modules.empty()) {
      skipped_ = "npm could not install @connectrpc/connect-node: " + why;
      return {};
    }
    ServerOptions options;
    options.memory_mode = GetParam();
    options.num_threads = 2;
    const std::string error = test_server_.Start(options);
    EXPECT_EQ("", error);
    *server = &test_server_.server();
    return press::RunShell("timeout 120 /usr/bin/node " ARENARPC_SOURCE_DIR
                           "/tests/e2e/web_node_client.js " + test_server_.port() + " " + modules +
                           " " + http_version + " " + transports);
  }
  // Every case of `transports` passed, and the connect-get transport's GET of Echo2 (a method
  // without side effects) reached the server as a GET.
  void ExpectCases(const press::ShellOutput& run, std::initializer_list<const char*> transports) {
    EXPECT_EQ(0, run.exit_code) << run.out;
    EXPECT_NE(std::string::npos, run.out.find("OK connect-get get_no_side_effects\n")) << run.out;
    EXPECT_EQ(1u, test_server_.server().GetMethodStats("arenarpc.e2e.TestService.Echo2").calls);
    for (const char* transport : transports) {
      // error_details: a handler's google.rpc.Status as grpc-web's grpc-status-details-bin and
      // Connect's JSON "details".
      for (const char* name : {"unary", "metadata", "handler_error", "error_details",
                               "unimplemented", "message_of_1_mib", "concurrent_calls",
                               "server_stream", "server_stream_error"}) {
        const std::string line = std::string("OK ") + transport + " " + name + "\n";
        EXPECT_NE(std::string::npos, run.out.find(line)) << line << run.out;
      }
    }
  }
  StreamTestServer test_server_;
  std::string skipped_;
};

TEST_P(WebNodeTest, ConnectNodeClient) {
  ASSERT_EQ(0, access("/usr/bin/node", X_OK)) << "nodejs is a test dependency";
  Server* server = nullptr;
  const press::ShellOutput run =
      RunClient("1.1", "grpc-web,connect-json,connect-proto,connect-get", &server);
  if (!skipped_.empty()) GTEST_SKIP() << skipped_;
  ExpectCases(run, {"grpc-web", "connect-json", "connect-proto"});
  EXPECT_NE(std::string::npos, run.out.find("INFO grpc-web grpc-accept-encoding=null\n"))
      << "answered over HTTP/1.1\n" << run.out;
  const MethodStats stats = server->GetMethodStats("arenarpc.e2e.TestService.Echo");
  EXPECT_EQ(3u * (1 + 1 + 1 + 1 + 1 + 50), stats.calls);
  EXPECT_EQ(3u * 2, stats.errors) << "the handler_error and error_details cases";
  EXPECT_EQ(stats.memory.acquired, stats.memory.released);
}

// gRPC-web and Connect (JSON and binary) over HTTP/2 (prior knowledge, as connect-node's
// httpVersion "2" sends it): the gRPC session serves them on the same connection as gRPC, with
// grpc-web's trailers as the body's last frame and Connect's replies as Connect's.
TEST_P(WebNodeTest, BrowserProtocolsOverHttp2) {
  ASSERT_EQ(0, access("/usr/bin/node", X_OK)) << "nodejs is a test dependency";
  Server* server = nullptr;
  const press::ShellOutput run =
      RunClient("2", "grpc-web,connect-json,connect-proto,connect-get", &server);
  if (!skipped_.empty()) GTEST_SKIP() << skipped_;
  ExpectCases(run, {"grpc-web", "connect-json", "connect-proto"});
  for (const char* transport : {"grpc-web", "connect-json", "connect-proto"}) {
    EXPECT_NE(std::string::npos,
              run.out.find(std::string("INFO ") + transport +
                           " grpc-accept-encoding=identity,deflate,gzip\n"))
        << transport << " answered by the HTTP/2 session\n" << run.out;
  }
  const MethodStats stats = server->GetMethodStats("arenarpc.e2e.TestService.Echo");
  EXPECT_EQ(3u * (1 + 1 + 1 + 1 + 1 + 50), stats.calls);
  EXPECT_EQ(3u * 2, stats.errors) << "the handler_error and error_details cases";
  EXPECT_EQ(stats.memory.acquired, stats.memory.released);
  EXPECT_EQ(0u, server->GetServerStats().malformed_frames) << "the client's calls were HTTP/2";
}

INSTANTIATE_TEST_SUITE_P(Modes, WebNodeTest, ::testing::ValuesIn(kAllModes));

}  // namespace
}  // namespace arenarpc::e2e
