#pragma once
// Checking CaptureOptions, and reading them from the ARENARPC_CAPTURE environment variable, which
// switches capture on for any server without a code change (docs/capture.md):
//   ARENARPC_CAPTURE=DIR[,samples_per_second=N][,max_file_bytes=N][,max_files=N]
//                       [,max_queued_records=N][,max_queued_bytes=N][,include_credentials=1]

#include <string>
#include <string_view>

#include "arenarpc/capture_options.h"

namespace arenarpc::capture {

inline constexpr const char* kCaptureEnvironmentVariable = "ARENARPC_CAPTURE";
// The most samples_per_second takes (at Start() and as the live setting).
inline constexpr int kMaxCaptureSamplesPerSecond = 100000;

// "" if the options are usable (or capture is off), else which option is wrong and why.
std::string ValidateCaptureOptions(const CaptureOptions& options);

// Parses a setting of the form above over *options (defaults for what it does not name).
// "" on success, else what is wrong with it.
std::string ParseCaptureSetting(std::string_view setting, CaptureOptions* options);

}  // namespace arenarpc::capture
