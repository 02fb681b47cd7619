#include "client/deprecated_channel_options.h"

#include <chrono>

#include "util/deprecated_option.h"

// The one place the library reads the deprecated fields.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace arenarpc::client {

using std::chrono::milliseconds;
using util::TakeDeprecated;

void ApplyDeprecatedSpellings(ChannelOptions* o) {
  TakeDeprecated<milliseconds>(&o->read_timeout_ms, &o->read_timeout);
  TakeDeprecated<milliseconds>(&o->write_timeout_ms, &o->write_timeout);
  TakeDeprecated<milliseconds>(&o->health_check_interval_ms, &o->health_check_interval);
  TakeDeprecated<milliseconds>(&o->health_check_timeout_ms, &o->health_check_timeout);
  TakeDeprecated<milliseconds>(&o->naming_refresh_interval_ms, &o->naming_refresh_interval);
}

}  // namespace arenarpc::client
