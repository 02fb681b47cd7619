#pragma once
// ServerState: everything a running server shares with its connections and calls, visible only
// to src/server/ (observers read it through stats::ServerView, server_snapshot.h). Each part has
// its own rules: ServerConfig (fixed at Start), ServerRuntime (threads and listeners, present
// while started), Admission (the server-wide half of admitting a request), ConnectionTable (open
// connections, with its own snapshot), the message-memory budget, the counters and LiveSettings
// (the settings that change at run time, applied to the parts above).
// Held by shared_ptr so that a call finishing after Stop() (a late done->Run()) still finds it
// alive.

#include <memory>

#include "capture/request_capture.h"
#include "server/serving_status_table.h"
#include "memory/message_memory_budget.h"
#include "server/admission.h"
#include "server/connection_table.h"
#include "server/live_settings.h"
#include "server/server_config.h"
#include "server/server_counters.h"
#include "stream/stream_registry.h"
#include "server/server_runtime.h"

namespace arenarpc::server {

struct ServerState : std::enable_shared_from_this<ServerState> {
  ServerConfig config;
  std::unique_ptr<ServerRuntime> runtime;  // set by a Start() that succeeded
  Admission admission;
  ConnectionTable connections;
  memory::MessageMemoryBudget message_memory;  // max_inflight_message_memory
  ServerCounters counters;
  // Open STRM streams and gRPC / grpc-web / Connect streaming calls, for the pages (held by the
  // streams too: they may outlive the state).
  std::shared_ptr<stream::StreamRegistry> streams = std::make_shared<stream::StreamRegistry>();
  LiveSettings live;  // what may change while the server runs, and who changed it
  // grpc.health.v1.Health's statuses (Server::SetServingStatus; NOT_SERVING once Stop() begins).
  std::shared_ptr<ServingStatusTable> health =
      std::make_shared<ServingStatusTable>();
  // ServerOptions::capture (or ARENARPC_CAPTURE); null = off. Set by Start() before the first
  // connection, kept until the state goes (its destructor writes what is queued).
  std::unique_ptr<capture::RequestCapture> capture;
};

}  // namespace arenarpc::server
