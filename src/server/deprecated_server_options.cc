#include "server/deprecated_server_options.h"

#include <chrono>

#include "memory/deprecated_memory_options.h"
#include "util/deprecated_option.h"

// The one place the library reads the deprecated fields.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace arenarpc::server {

using std::chrono::milliseconds;
using std::chrono::seconds;
using util::TakeDeprecated;

void ApplyDeprecatedSpellings(ServerTlsOptions* o) {
  TakeDeprecated<milliseconds>(&o->reload_check_interval_ms, &o->reload_check_interval);
}

void ApplyDeprecatedSpellings(ServerOptions* o) {
  TakeDeprecated<milliseconds>(&o->read_timeout_ms, &o->read_timeout);
  TakeDeprecated<milliseconds>(&o->first_byte_timeout_ms, &o->first_byte_timeout);
  TakeDeprecated<milliseconds>(&o->write_timeout_ms, &o->write_timeout);
  TakeDeprecated<milliseconds>(&o->stream_idle_timeout_ms, &o->stream_idle_timeout);
  TakeDeprecated<milliseconds>(&o->stop_deadline_ms, &o->stop_deadline);
  TakeDeprecated<seconds>(&o->cors_max_age_sec, &o->cors_max_age);
  TakeDeprecated<milliseconds>(&o->registry_lease_ttl_ms, &o->registry_lease_ttl);
  ApplyDeprecatedSpellings(&o->tls);
  memory::ApplyDeprecatedSpellings(&o->memory.automatic);
}

}  // namespace arenarpc::server
