#pragma once
// TlsContextState: one built SSL_CTX and the ALPN list its callback reads. Sessions hold it, so a
// reload's new state never frees what an older connection's handshake still uses.

#include <string>

typedef struct ssl_ctx_st SSL_CTX;

namespace arenarpc::net {

struct TlsContextState {
  TlsContextState() = default;
  TlsContextState(const TlsContextState&) = delete;
  TlsContextState& operator=(const TlsContextState&) = delete;
  ~TlsContextState();

  SSL_CTX* ctx = nullptr;
  std::string alpn_wire;  // ALPN protocols, each prefixed by its length
};

}  // namespace arenarpc::net
