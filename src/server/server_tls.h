#pragma once
// The server's TLS: its context built from ServerTlsOptions, and the choice a new connection's
// first bytes make between TLS and clear text (docs/tls.md).

#include <memory>
#include <string>

#include "arenarpc/server.h"
#include "net/connection.h"
#include "net/tls_context.h"

namespace arenarpc::server {

struct ServerState;

// nullptr with an empty *error when TLS is off (no cert_file/key_file); nullptr with *error
// saying what is wrong.
std::shared_ptr<net::TlsContext> MakeServerTlsContext(const ServerTlsOptions& options,
                                                      std::string* error);

enum class Transport { kNeedMore, kClearText, kTls, kRefused };
// Looks at a new connection's first bytes: a TLS ClientHello starts TLS under the connection
// (the input then holds plaintext as it is decrypted); clear text passes unless require_tls.
// kRefused: logged and counted; close the connection.
Transport ChooseTransport(ServerState& state, net::Connection& connection,
                          const net::BufferChain& input);

}  // namespace arenarpc::server
