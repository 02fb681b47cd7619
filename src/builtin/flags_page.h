#pragma once
// /flags: every setting of the server with its value and whether it can change at run time, and
// the latest changes (who, old and new value). /flags/NAME?setvalue=VALUE (brpc's spelling; also
// /flags?name=NAME&setvalue=VALUE) changes a live setting through the server's ServerSettings
// face. Text by default, HTML for browsers (?format=html), JSON with ?format=json.

#include <memory>

#include "builtin/builtin_registry.h"

namespace arenarpc::stats {
class ServerView;
class ServerSettings;
}  // namespace arenarpc::stats

namespace arenarpc::builtin {

void AddFlagsPage(BuiltinRegistry* registry, std::shared_ptr<const stats::ServerView> view,
                  std::shared_ptr<stats::ServerSettings> settings);

}  // namespace arenarpc::builtin
