#include "arenarpc/logging.h"
#include "log_capture.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace arenarpc {
namespace {

// Captures what reaches the sink; restores the defaults afterwards.
class LoggingTest : public ::testing::Test {
 protected:
  void TearDown() override { SetMinLogLevel(LogLevel::kWarning); }
  std::vector<LogCapture::Message> Seen() { return log_.Seen(); }

  LogCapture log_;
};

TEST_F(LoggingTest, ACustomSinkReceivesMessagesWithTheirLevel) {
  Log(LogLevel::kError, "disk on fire");
  Log(LogLevel::kWarning, "smoke");
  const auto seen = Seen();
  ASSERT_EQ(2u, seen.size());
  EXPECT_EQ(LogLevel::kError, seen[0].first);
  EXPECT_EQ("disk on fire", seen[0].second);
  EXPECT_EQ(LogLevel::kWarning, seen[1].first);
  EXPECT_STREQ("WARNING", LogLevelName(seen[1].first));
}

TEST_F(LoggingTest, MessagesBelowTheMinimumLevelAreDropped) {
  EXPECT_EQ(LogLevel::kWarning, MinLogLevel());  // the default
  Log(LogLevel::kInfo, "dropped");
  Log(LogLevel::kDebug, "dropped too");
  EXPECT_TRUE(Seen().empty());
  SetMinLogLevel(LogLevel::kDebug);
  EXPECT_TRUE(LogEnabled(LogLevel::kDebug));
  Log(LogLevel::kDebug, "kept");
  SetMinLogLevel(LogLevel::kError);
  Log(LogLevel::kWarning, "dropped");
  Log(LogLevel::kError, "kept too");
  const auto seen = Seen();
  ASSERT_EQ(2u, seen.size());
  EXPECT_EQ("kept", seen[0].second);
  EXPECT_EQ("kept too", seen[1].second);
}

TEST_F(LoggingTest, RateLimitingCapsABurstAndReportsWhatItDropped) {
  RateLimitedLog site(3, LogLevel::kWarning);
  for (int i = 0; i < 100; ++i) site.Log("bad frame " + std::to_string(i));
  auto seen = Seen();
  ASSERT_EQ(3u, seen.size());
  EXPECT_EQ("bad frame 0", seen[0].second);
  EXPECT_EQ("bad frame 2", seen[2].second);
  EXPECT_EQ(97u, site.suppressed_total());
  // The next second's first message is preceded by the count of what was dropped.
  std::this_thread::sleep_for(std::chrono::milliseconds(1050));
  site.Log("later");
  seen = Seen();
  ASSERT_EQ(5u, seen.size());
  EXPECT_EQ("(97 similar lines suppressed)", seen[3].second);
  EXPECT_EQ("later", seen[4].second);
}

TEST_F(LoggingTest, SitesAreLimitedIndependently) {
  RateLimitedLog a(1), b(1);
  a.Log("a1");
  a.Log("a2");
  b.Log("b1");
  const auto seen = Seen();
  ASSERT_EQ(2u, seen.size());
  EXPECT_EQ("a1", seen[0].second);
  EXPECT_EQ("b1", seen[1].second);
}

TEST_F(LoggingTest, SinkCanBeReplacedWhileOtherThreadsLog) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&stop] {
      while (!stop.load()) Log(LogLevel::kError, "busy");
    });
  }
  std::atomic<int> second_sink_calls{0};
  for (int i = 0; i < 200; ++i) {
    SetLogSink([&second_sink_calls](LogLevel, std::string_view) { second_sink_calls.fetch_add(1); });
    log_.Install();  // back to the capturing sink
  }
  SetLogSink([&second_sink_calls](LogLevel, std::string_view) { second_sink_calls.fetch_add(1); });
  const int before = second_sink_calls.load();
  while (second_sink_calls.load() == before) std::this_thread::yield();
  stop.store(true);
  for (auto& thread : threads) thread.join();
  EXPECT_GT(second_sink_calls.load(), before);
  SetLogSink(nullptr);  // the lambda's captures go out of scope with this test
}

TEST(DefaultLogSinkTest, WritesATimestampedLineToStderr) {
  SetLogSink(nullptr);
  char path[] = "/tmp/arenarpc_log_XXXXXX";
  const int file = mkstemp(path);
  ASSERT_GE(file, 0);
  std::fflush(stderr);
  const int saved = dup(STDERR_FILENO);
  dup2(file, STDERR_FILENO);
  Log(LogLevel::kError, "disk on fire");
  std::fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  close(file);
  unlink(path);
  EXPECT_TRUE(std::regex_match(
      text, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z ERROR arenarpc: disk on fire\n)")))
      << text;
}

}  // namespace
}  // namespace arenarpc
