#pragma once
// LogCapture: while it lives, arenarpc's log messages go to it instead of stderr.

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "arenarpc/logging.h"

namespace arenarpc {

class LogCapture {
 public:
  using Message = std::pair<LogLevel, std::string>;

  LogCapture() { Install(); }
  ~LogCapture() { SetLogSink(nullptr); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // Makes this capture the sink again (after a test replaced it).
  void Install() {
    SetLogSink([this](LogLevel level, std::string_view message) {
      std::lock_guard lock(mutex_);
      seen_.emplace_back(level, std::string(message));
    });
  }
  std::vector<Message> Seen() {
    std::lock_guard lock(mutex_);
    return seen_;
  }
  // Waits (at most 5 s) for a message containing `text`.
  bool WaitFor(const std::string& text, LogLevel* level) {
    for (int i = 0; i < 500; ++i) {
      for (const auto& [l, message] : Seen()) {
        if (message.find(text) != std::string::npos) {
          *level = l;
          return true;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

 private:
  std::mutex mutex_;
  std::vector<Message> seen_;
};

}  // namespace arenarpc
