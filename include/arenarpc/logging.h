#pragma once
// Logging: where arenarpc's own messages go. By default every message at or above the minimum level
// (WARNING) is written to stderr as one line:
//
//   2026-11-24T04:18:58.123456Z WARNING arenarpc: closing connection from 1.2.3.4:5: malformed frame
//
// An application routes them elsewhere with SetLogSink (its own logger, a test's capture):
//
//   arenarpc::SetLogSink([](arenarpc::LogLevel level, std::string_view message) {
//     my_logger.log(ToMyLevel(level), message);
//   });
//
// Messages that bad input can repeat (malformed frames, slow senders, accept failures) go through
// a RateLimitedLog at their site: at most N a second, then one line saying how many were dropped.

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string_view>

namespace arenarpc {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// "DEBUG", "INFO", "WARNING", "ERROR".
const char* LogLevelName(LogLevel level) noexcept;

// Receives every message at or above the minimum level; called on the thread that logs, possibly
// several at once (the sink synchronizes itself). The message has no trailing newline.
using LogSink = std::function<void(LogLevel level, std::string_view message)>;

// Replaces the sink; an empty function restores the default (stderr). Thread-safe; a message being
// delivered while the sink is replaced goes to the old or the new one.
void SetLogSink(LogSink sink);
// Messages below `level` are dropped before they reach the sink (default: kWarning).
void SetMinLogLevel(LogLevel level) noexcept;
LogLevel MinLogLevel() noexcept;
bool LogEnabled(LogLevel level) noexcept;

// Sends one message to the sink if its level is enabled.
void Log(LogLevel level, std::string_view message);

// One log site that input can repeat: at most `per_second` messages a second reach Log(); the
// rest are counted, and the next message that passes is preceded by "(N similar lines
// suppressed)". Thread-safe.
class RateLimitedLog {
 public:
  explicit RateLimitedLog(int per_second = 5, LogLevel level = LogLevel::kWarning)
      : per_second_(per_second), level_(level) {}
  void Log(std::string_view message);
  uint64_t suppressed_total() const;

 private:
  const int per_second_;
  const LogLevel level_;
  mutable std::mutex mutex_;
  std::chrono::steady_clock::time_point window_start_{};
  int in_window_ = 0;
  uint64_t suppressed_in_window_ = 0;
  uint64_t suppressed_total_ = 0;
};

}  // namespace arenarpc
