#include <chrono>

#include "memory/deprecated_memory_options.h"
#include "util/deprecated_option.h"

// The one place the library reads the deprecated field.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace arenarpc::memory {

void ApplyDeprecatedSpellings(AutoSettings* settings) {
  util::TakeDeprecated<std::chrono::milliseconds>(&settings->recheck_interval_ms,
                                                  &settings->recheck_interval);
}

}  // namespace arenarpc::memory
