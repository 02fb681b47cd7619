#pragma once
// The library's rate-limited log sites use the public arenarpc::RateLimitedLog (logging.h).
#include "arenarpc/logging.h"

namespace arenarpc::util {
using RateLimitedLog = arenarpc::RateLimitedLog;
}  // namespace arenarpc::util
