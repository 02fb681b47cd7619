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
  // The next second's first message is preceded by the count of what was dropped.
  std::this_thread::sleep_for(std::chrono::milliseconds(1050));
  site.Log("later");
  seen = Seen();
  ASSERT_EQ(5u, seen.size());
  EXPECT_EQ("later", seen[4].second);
  // Counted from what reached the sink: the lines delivered and the count the sink was told of
  // add up to the 100 logged, and the site's own total agrees with the sink.
  const std::regex suppressed(R"(\((\d+) similar lines suppressed\))");
  std::smatch match;
  ASSERT_TRUE(std::regex_match(seen[3].second, match, suppressed)) << seen[3].second;
  const uint64_t reported = std::stoull(match[1].str());
  uint64_t delivered = 0;
  for (const auto& [level, text] : seen) delivered += text.rfind("bad frame ", 0) == 0;
  EXPECT_EQ(100u, delivered + reported);
  EXPECT_EQ(reported, site.suppressed_total());
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
  // The logging threads reach the new sink (bounded wait: a sink never called fails the test).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (second_sink_calls.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  stop.store(true);
  for (auto& thread : threads) thread.join();
  ASSERT_GT(second_sink_calls.load(), 0);
  // With every thread joined, one message goes to the new sink exactly, none to the old one.
  const size_t captured = Seen().size();
  const int calls = second_sink_calls.load();
  Log(LogLevel::kError, "one more");
  EXPECT_EQ(calls + 1, second_sink_calls.load());
  EXPECT_EQ(captured, Seen().size());
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
