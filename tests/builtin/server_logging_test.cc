// The server's own messages reach the application's log sink.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "arenarpc/logging.h"
#include "server_fixture.h"

namespace arenarpc {
namespace {

class ServerLoggingTest : public e2e::ServerTest {
 protected:
  void SetUp() override {
    SetLogSink([this](LogLevel level, std::string_view message) {
      std::lock_guard lock(mutex_);
      seen_.emplace_back(level, std::string(message));
    });
  }
  void TearDown() override {
    ServerTest::TearDown();
    SetLogSink(nullptr);
  }
  // Waits (at most 5 s) for a message containing `text`.
  bool WaitForMessage(const std::string& text, LogLevel* level) {
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard lock(mutex_);
        for (const auto& [l, message] : seen_) {
          if (message.find(text) != std::string::npos) {
            *level = l;
            return true;
          }
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  std::mutex mutex_;
  std::vector<std::pair<LogLevel, std::string>> seen_;
};

TEST_P(ServerLoggingTest, AMalformedFrameIsLoggedThroughTheSink) {
  StartServer();
  e2e::RawClient raw(port_);
  ASSERT_TRUE(raw.connected());
  raw.SendBytes("GET /status HTTP/1.1\r\nHost: x\r\n\r\n");  // not baidu_std
  EXPECT_TRUE(raw.WaitForClose());
  LogLevel level = LogLevel::kDebug;
  ASSERT_TRUE(WaitForMessage("malformed frame", &level));
  EXPECT_EQ(LogLevel::kWarning, level);
  EXPECT_EQ(1u, server_->GetServerStats().malformed_frames);
}

INSTANTIATE_TEST_SUITE_P(Modes, ServerLoggingTest, ::testing::Values("heap"));

}  // namespace
}  // namespace arenarpc
