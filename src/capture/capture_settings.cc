#include "capture/capture_settings.h"

#include <charconv>
#include <cstdint>

namespace arenarpc::capture {
namespace {

bool ParseNumber(std::string_view text, uint64_t* value) {
  if (text.empty()) return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return error == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string ValidateCaptureOptions(const CaptureOptions& o) {
  if (o.directory.empty()) return "";
  if (o.samples_per_second < 0 || o.samples_per_second > kMaxCaptureSamplesPerSecond) {
    return "capture.samples_per_second must be 0.." +
           std::to_string(kMaxCaptureSamplesPerSecond) + " (0 = paused), got " +
           std::to_string(o.samples_per_second);
  }
  if (o.max_file_bytes < 4096) {
    return "capture.max_file_bytes must be >= 4096, got " + std::to_string(o.max_file_bytes);
  }
  if (o.max_files < 1) return "capture.max_files must be >= 1, got " + std::to_string(o.max_files);
  if (o.max_queued_records < 1) {
    return "capture.max_queued_records must be >= 1, got " + std::to_string(o.max_queued_records);
  }
  if (o.max_queued_bytes < 4096) {
    return "capture.max_queued_bytes must be >= 4096, got " + std::to_string(o.max_queued_bytes);
  }
  return "";
}

std::string ParseCaptureSetting(std::string_view setting, CaptureOptions* options) {
  const size_t comma = setting.find(',');
  options->directory = std::string(setting.substr(0, comma));
  if (options->directory.empty()) {
    return std::string(kCaptureEnvironmentVariable) + ": no directory (DIR[,name=value...])";
  }
  std::string_view rest = comma == std::string_view::npos ? "" : setting.substr(comma + 1);
  while (!rest.empty()) {
    const size_t next = rest.find(',');
    const std::string_view item = rest.substr(0, next);
    rest = next == std::string_view::npos ? "" : rest.substr(next + 1);
    const size_t eq = item.find('=');
    const std::string_view name = item.substr(0, eq);
    uint64_t value = 0;
    if (eq == std::string_view::npos || !ParseNumber(item.substr(eq + 1), &value) ||
        value > (uint64_t{1} << 40)) {
      return std::string(kCaptureEnvironmentVariable) + ": '" + std::string(item) +
             "' is not name=number";
    }
    const int small = value > 1'000'000'000 ? 1'000'000'000 : static_cast<int>(value);
    if (name == "samples_per_second") {
      options->samples_per_second = small;
    } else if (name == "max_file_bytes") {
      options->max_file_bytes = value;
    } else if (name == "max_files") {
      options->max_files = small;
    } else if (name == "max_queued_records") {
      options->max_queued_records = small;
    } else if (name == "max_queued_bytes") {
      options->max_queued_bytes = value;
    } else if (name == "include_credentials") {
      options->include_credentials = value != 0;
    } else {
      return std::string(kCaptureEnvironmentVariable) + ": unknown setting '" + std::string(name) +
             "' (samples_per_second, max_file_bytes, max_files, max_queued_records, "
             "max_queued_bytes, include_credentials)";
    }
  }
  return ValidateCaptureOptions(*options);
}

}  // namespace arenarpc::capture
