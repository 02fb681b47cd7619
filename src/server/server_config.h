#pragma once
// ServerConfig: what Start() fixes for the life of a server — the options, the services and their
// methods, the memory strategies by mode name, the built-in pages, the TLS context. Written before
// the first connection is accepted and only read after (the TLS context reloads its certificate
// by itself, under its own lock).

#include <map>
#include <memory>
#include <string>

#include "arenarpc/server.h"
#include "builtin/builtin_registry.h"
#include "net/tls_context.h"
#include "server/service_registry.h"

namespace arenarpc::memory {
class MessageMemory;
}

namespace arenarpc::server {

struct ServerConfig {
  ServerOptions options;
  ServiceRegistry registry;
  std::map<std::string, std::shared_ptr<memory::MessageMemory>> strategies;  // by mode name
  builtin::BuiltinRegistry builtins;
  std::shared_ptr<net::TlsContext> tls;  // options.tls; null = TLS off
};

}  // namespace arenarpc::server
