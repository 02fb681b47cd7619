#pragma once
// ServerOptions' deprecated spellings (arenarpc/deprecated_option.h), applied once: Start() calls
// it on its copy of the options before it validates them; nothing else reads the old fields.

#include "arenarpc/server.h"

namespace arenarpc::server {

void ApplyDeprecatedSpellings(ServerTlsOptions* options);
void ApplyDeprecatedSpellings(ServerOptions* options);  // and its tls and memory.automatic

}  // namespace arenarpc::server
