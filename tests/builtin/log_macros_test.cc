// LOG/CHECK macros of arenarpc/log_macros.h, as a file ported from brpc uses them.
#include "arenarpc/log_macros.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "log_capture.h"

namespace arenarpc {
namespace {

class LogMacrosTest : public ::testing::Test {
 protected:
  void TearDown() override { SetMinLogLevel(LogLevel::kWarning); }
  LogCapture log_;
};

TEST_F(LogMacrosTest, LogStreamsOneMessageWithFileAndLineAtItsLevel) {
  const int line = __LINE__ + 1;
  LOG(ERROR) << "backend " << 7 << " failed";
  LOG(WARNING) << "slow";
  const auto seen = log_.Seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].first, LogLevel::kError);
  EXPECT_EQ(seen[0].second, "log_macros_test.cc:" + std::to_string(line) + "] backend 7 failed");
  EXPECT_EQ(seen[1].first, LogLevel::kWarning);
}

TEST_F(LogMacrosTest, DisabledLevelsAreNeitherSentNorFormatted) {
  int formatted = 0;
  auto count = [&formatted] { return ++formatted; };
  LOG(INFO) << "dropped " << count();  // INFO is below the default minimum (WARNING)
  VLOG(1) << "dropped too " << count();
  EXPECT_EQ(formatted, 0);
  EXPECT_TRUE(log_.Seen().empty());
  SetMinLogLevel(LogLevel::kInfo);
  LOG(INFO) << "kept " << count();
  LOG(NOTICE) << "kept as INFO";
  EXPECT_EQ(formatted, 1);
  ASSERT_EQ(log_.Seen().size(), 2u);
  EXPECT_EQ(log_.Seen()[1].first, LogLevel::kInfo);
}

TEST_F(LogMacrosTest, LogIfAndPlog) {
  LOG_IF(ERROR, 1 + 1 == 3) << "never";
  LOG_IF(ERROR, 1 + 1 == 2) << "arithmetic";
  errno = ENOENT;
  PLOG(ERROR) << "open /nonexistent";
  const auto seen = log_.Seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_NE(seen[0].second.find("] arithmetic"), std::string::npos);
  EXPECT_NE(seen[1].second.find("] open /nonexistent: No such file or directory [2]"),
            std::string::npos)
      << seen[1].second;
}

TEST_F(LogMacrosTest, PassingChecksLogNothing) {
  int evaluated = 0;
  CHECK(++evaluated == 1) << "not printed";
  CHECK_EQ(2, 1 + 1);
  CHECK_LT(1, 2) << "fine";
  CHECK_GE(evaluated, 1);
  EXPECT_EQ(evaluated, 1);  // the condition runs once
  EXPECT_TRUE(log_.Seen().empty());
}

TEST(LogMacrosDeathTest, FailingChecksAndFatalAbortWithTheValues) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const int a = 3, b = 4;
  EXPECT_DEATH(CHECK_EQ(a, b) << "sizes differ", "Check failed: a == b \\(3 vs. 4\\) sizes differ");
  EXPECT_DEATH(CHECK(a > b), "Check failed: a > b");
  EXPECT_DEATH(LOG(FATAL) << "giving up", "giving up");
}

}  // namespace
}  // namespace arenarpc
