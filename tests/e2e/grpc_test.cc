// gRPC over HTTP/2 on the arenarpc port, called by Python grpcio (grpc_python_client.py): unary
// echo, status mapping, metadata, deadline, cancellation by RST_STREAM, a message over the limit,
// gzip both ways, many concurrent calls on one connection, the health service — in every memory
// strategy. Then GOAWAY on Stop with a call in flight.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "../press/run_shell.h"
#include "server_fixture.h"

namespace arenarpc::e2e {
namespace {

constexpr size_t kMaxBody = 256u << 10;

// e2e_test_pb2.py, generated once per test binary run.
const std::string& PythonModuleDir() {
  static const std::string dir = [] {
    char pattern[] = "/tmp/arenarpc_grpc_py_XXXXXX";
    const std::string made = mkdtemp(pattern) != nullptr ? pattern : "";
    const press::ShellOutput protoc = press::RunShell(
        "/usr/bin/protoc --python_out=" + made + " -I" ARENARPC_SOURCE_DIR "/tests/e2e e2e_test.proto");
    return protoc.exit_code == 0 ? made : std::string();
  }();
  return dir;
}

class GrpcTest : public ServerTest {};

TEST_P(GrpcTest, PythonGrpcioClient) {
  ServerOptions options;
  options.max_body_size = kMaxBody;
  StartServer(options);
  ASSERT_FALSE(PythonModuleDir().empty());
  const press::ShellOutput run = press::RunShell(
      "timeout 120 /usr/bin/python3 " ARENARPC_SOURCE_DIR "/tests/e2e/grpc_python_client.py " +
      std::to_string(port_) + " " + PythonModuleDir() + " " + std::to_string(kMaxBody));
  const std::string& output = run.out;
  EXPECT_EQ(0, run.exit_code) << output;
  for (const char* name :
       {"unary", "metadata", "handler_error", "unimplemented", "unparsable_request",
        "deadline_exceeded", "cancellation", "message_over_limit", "gzip",
        "concurrent_calls_one_connection", "health_check"}) {
    EXPECT_NE(std::string::npos, output.find(std::string("OK ") + name + "\n"))
        << name << "\n" << output;
  }
  // The good calls and the refused ones were counted as gRPC, not as malformed input.
  EXPECT_EQ(0u, server_->GetServerStats().malformed_frames);
}

INSTANTIATE_TEST_SUITE_P(Modes, GrpcTest, ::testing::ValuesIn(kAllModes));

}  // namespace
}  // namespace arenarpc::e2e
