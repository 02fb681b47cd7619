#include "arenarpc/logging.h"

#include <atomic>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>

namespace arenarpc {
namespace {

std::atomic<LogLevel> min_level{LogLevel::kWarning};

// The sink in force; readers copy the shared_ptr so that a replaced sink lives until its last
// message is delivered.
std::mutex sink_mutex;
std::shared_ptr<const LogSink>& CurrentSink() {
  static std::shared_ptr<const LogSink> sink;
  return sink;
}

void WriteToStderr(LogLevel level, std::string_view message) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1000000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char stamp[40];
  const size_t n = std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(stamp + n, sizeof stamp - n, ".%06dZ", static_cast<int>(micros));
  std::string line;
  line.reserve(message.size() + 64);
  line.append(stamp).append(" ").append(LogLevelName(level)).append(" arenarpc: ");
  line.append(message).append("\n");
  std::fwrite(line.data(), 1, line.size(), stderr);  // one write: lines of threads do not mix
}

}  // namespace

const char* LogLevelName(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarning: return "WARNING";
    case LogLevel::kError: return "ERROR";
  }
  return "UNKNOWN";
}

void SetLogSink(LogSink sink) {
  auto next = sink ? std::make_shared<const LogSink>(std::move(sink)) : nullptr;
  std::lock_guard lock(sink_mutex);
  CurrentSink().swap(next);
}

void SetMinLogLevel(LogLevel level) noexcept { min_level.store(level, std::memory_order_relaxed); }

LogLevel MinLogLevel() noexcept { return min_level.load(std::memory_order_relaxed); }

bool LogEnabled(LogLevel level) noexcept { return level >= MinLogLevel(); }

void Log(LogLevel level, std::string_view message) {
  if (!LogEnabled(level)) return;
  std::shared_ptr<const LogSink> sink;
  {
    std::lock_guard lock(sink_mutex);
    sink = CurrentSink();
  }
  if (sink) {
    (*sink)(level, message);
  } else {
    WriteToStderr(level, message);
  }
}

void RateLimitedLog::Log(std::string_view message) {
  if (!LogEnabled(level_)) return;
  const auto now = std::chrono::steady_clock::now();
  uint64_t suppressed_before = 0;
  {
    std::lock_guard lock(mutex_);
    if (now - window_start_ >= std::chrono::seconds(1)) {
      suppressed_before = suppressed_in_window_;
      window_start_ = now;
      in_window_ = 0;
      suppressed_in_window_ = 0;
    }
    if (in_window_ >= per_second_) {
      ++suppressed_in_window_;
      ++suppressed_total_;
      return;
    }
    ++in_window_;
  }
  if (suppressed_before != 0) {
    arenarpc::Log(level_, "(" + std::to_string(suppressed_before) + " similar lines suppressed)");
  }
  arenarpc::Log(level_, message);
}

uint64_t RateLimitedLog::suppressed_total() const {
  std::lock_guard lock(mutex_);
  return suppressed_total_;
}

}  // namespace arenarpc
