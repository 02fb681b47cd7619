#pragma once
// Checks shared by the channels' Init(): each returns an empty string if the value is valid, else
// a message naming the option.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace arenarpc::client {

// A duration option: > 0, or -1 (`minus_one` says what -1 means).
inline std::string CheckTimeoutMs(std::string_view name, int64_t ms,
                                  std::string_view minus_one = "no deadline") {
  if (ms > 0 || ms == -1) return {};
  return std::string(name) + "=" + std::to_string(ms) + " must be > 0 or -1 (" +
         std::string(minus_one) + ")";
}

// An interval option: 1 ms .. 1 h.
inline std::string CheckInterval(std::string_view name, std::chrono::milliseconds value) {
  if (value >= std::chrono::milliseconds(1) && value <= std::chrono::hours(1)) return {};
  return std::string(name) + "=" + std::to_string(value.count()) + "ms must be in [1 ms, 1 h]";
}

// A stuck-connection timeout: > 0, or negative = never.
inline std::string CheckStuckTimeout(std::string_view name, std::chrono::milliseconds value) {
  if (value.count() != 0) return {};
  return std::string(name) + "=0ms must be > 0, or negative (never)";
}

// ChannelOptions::protocol names gRPC ("grpc", or brpc's "h2:grpc").
inline std::string CheckMaxRetry(int max_retry) {
  if (max_retry >= 0) return {};
  return "max_retry=" + std::to_string(max_retry) + " must be >= 0";
}

}  // namespace arenarpc::client
