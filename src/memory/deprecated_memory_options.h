#pragma once
// AutoSettings' deprecated recheck_interval_ms (arenarpc/deprecated_option.h), read in
// deprecated_memory_options.cc only: when set it replaces recheck_interval and is reset. The auto
// strategy and the validation apply it to their copy, Server::Start() to ServerOptions::memory.

#include "arenarpc/memory/message_memory.h"

namespace arenarpc::memory {

void ApplyDeprecatedSpellings(AutoSettings* settings);

}  // namespace arenarpc::memory
