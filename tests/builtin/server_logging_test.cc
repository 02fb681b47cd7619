// The server's own messages reach the application's log sink.
#include <gtest/gtest.h>

#include "log_capture.h"
#include "server_fixture.h"

namespace arenarpc {
namespace {

class ServerLoggingTest : public e2e::ServerTest {
 protected:
  LogCapture log_;  // outlives the server (TearDown stops it first)
};

TEST_P(ServerLoggingTest, AMalformedFrameIsLoggedThroughTheSink) {
  StartServer();
  e2e::RawClient raw(port_);
  ASSERT_TRUE(raw.connected());
  // baidu_std header whose meta (8 bytes) is larger than its body (4 bytes)
  raw.SendBytes(std::string("PRPC\0\0\0\x04\0\0\0\x08", 12));
  EXPECT_TRUE(raw.WaitForClose());
  LogLevel level = LogLevel::kDebug;
  ASSERT_TRUE(log_.WaitFor("malformed baidu_std request", &level));
  EXPECT_EQ(LogLevel::kWarning, level);
  EXPECT_EQ(1u, StatSoon(&ServerStats::malformed_frames, 1));
}

INSTANTIATE_TEST_SUITE_P(Modes, ServerLoggingTest, ::testing::Values("heap"));

}  // namespace
}  // namespace arenarpc
