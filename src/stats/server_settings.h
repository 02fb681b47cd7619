#pragma once
// ServerSettings: the one face through which a page changes a running server — its settings as
// copies, the recent changes, and one write: Set(). Like ServerView it holds nothing of the
// server past a call and outlives it (then available() is false and Set() answers kGone).

#include <string>
#include <string_view>
#include <vector>

#include "arenarpc/live_settings.h"

namespace arenarpc::stats {

// Who asks for a change (the change log's who).
struct SettingOrigin {
  std::string peer;       // "ip:port", or "Server::SetLiveSetting"
  std::string principal;  // the authenticated user, "" when none
};

enum class SetVerdict {
  kChanged,   // applied (and logged), also when the value equals the old one
  kUnknown,   // no setting of that name
  kNotLive,   // the setting is fixed at Start()
  kInvalid,   // the value is not one the setting takes
  kGone,      // the server is stopping or gone
};

class ServerSettings {
 public:
  virtual ~ServerSettings() = default;
  virtual bool available() const = 0;
  // Every setting, live ones and those fixed at Start(), in a stable order.
  virtual std::vector<ServerSetting> List() const = 0;
  // The latest changes, oldest first (at most kSettingHistory).
  virtual std::vector<SettingChange> Changes() const = 0;
  // Applies `value` to the live setting `name`; anything but kChanged leaves everything as it
  // was, with the reason in *error.
  virtual SetVerdict Set(std::string_view name, std::string_view value, const SettingOrigin& who,
                         std::string* error) = 0;
};

}  // namespace arenarpc::stats
