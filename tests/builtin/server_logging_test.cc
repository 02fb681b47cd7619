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
  raw.SendBytes("GET /status HTTP/1.1\r\nHost: x\r\n\r\n");  // not baidu_std
  EXPECT_TRUE(raw.WaitForClose());
  LogLevel level = LogLevel::kDebug;
  ASSERT_TRUE(log_.WaitFor("malformed frame", &level));
  EXPECT_EQ(LogLevel::kWarning, level);
  EXPECT_EQ(1u, server_->GetServerStats().malformed_frames);
}

INSTANTIATE_TEST_SUITE_P(Modes, ServerLoggingTest, ::testing::Values("heap"));

}  // namespace
}  // namespace arenarpc
