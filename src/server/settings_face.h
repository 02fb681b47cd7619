#pragma once
// The ServerSettings face of a running server: what /flags lists and changes, through
// LiveSettings. It holds the state weakly (the pages that hold it live inside the state).

#include <memory>

#include "stats/server_settings.h"

namespace arenarpc::server {

struct ServerState;

std::shared_ptr<stats::ServerSettings> MakeServerSettings(std::weak_ptr<ServerState> state);

}  // namespace arenarpc::server
