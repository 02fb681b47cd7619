#pragma once
// The protocols a server speaks, by the wire protocol recognised from a connection's first bytes
// (protocol/wire_protocol.h).

#include <memory>
#include <string_view>

#include "protocol/wire_protocol.h"
#include "server/server_protocol.h"

namespace arenarpc::server {

// One row of the table of protocols a server speaks.
struct ServerProtocolEntry {
  std::string_view name;
  protocol::WireProtocol wire;
  // `internal_port`: the connection came in on ServerOptions::internal_port. `owner` outlives
  // the protocol (it owns it).
  std::unique_ptr<ServerProtocol> (*create)(ServerState& state, ProtocolOwner& owner,
                                            bool internal_port);
};

// The entry for a recognised protocol, or nullptr.
const ServerProtocolEntry* FindServerProtocol(protocol::WireProtocol wire);

}  // namespace arenarpc::server
