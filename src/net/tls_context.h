#pragma once
// TlsContext: the OpenSSL configuration of one side (a server's port, or a channel): certificate
// and key (PEM files), the CA that verifies the peer, versions, ciphers, ALPN. Sessions
// (tls_session.h) are made from the current configuration; Reload() rebuilds it from the files,
// so that new handshakes use a renewed certificate while open connections keep theirs.

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "arenarpc/tls_version.h"

namespace arenarpc::net {

class TlsSession;
struct TlsContextState;  // one built SSL_CTX and what its callbacks read (tls_context.cc)

struct TlsConfig {
  bool server = true;
  std::string cert_file, key_file;  // server: required; client: optional (mTLS)
  // Server: non-empty = clients must present a certificate signed by it (mTLS).
  // Client: the CA that verifies the server; empty = OpenSSL's default trust store.
  std::string ca_file;
  bool verify_peer = true;            // client only: check the server's chain and name
  TlsVersion min_version = TlsVersion::kTls12;
  std::string ciphers;                // TLS 1.2 cipher list (OpenSSL syntax); empty = default
  std::string ciphersuites;           // TLS 1.3 suites; empty = default
  std::vector<std::string> alpn;      // server: what it accepts, in preference order; client: offers
  // Server: >0 = a new handshake checks the files' mtimes at most this often and reloads them
  // when they changed.
  int reload_check_interval_ms = 0;
};

// The settings ServerTlsOptions and ChannelTlsOptions share, by name.
template <typename PublicOptions>
TlsConfig CommonTlsConfig(const PublicOptions& options, bool server) {
  TlsConfig config;
  config.server = server;
  config.cert_file = options.cert_file;
  config.key_file = options.key_file;
  config.min_version = options.min_version;
  config.ciphers = options.ciphers;
  config.ciphersuites = options.ciphersuites;
  return config;
}

class TlsContext {
 public:
  // nullptr with *error saying which file or setting is wrong.
  static std::shared_ptr<TlsContext> Create(const TlsConfig& config, std::string* error);
  ~TlsContext();

  // Rebuilds the configuration from the files. On failure the current one stays; false + *error.
  bool Reload(std::string* error);
  // A session for one new connection. Client: `server_name` is sent as SNI (if it is a name) and
  // checked against the certificate when verify_peer is on.
  std::unique_ptr<TlsSession> NewSession(std::string_view server_name, std::string* error);
  const TlsConfig& config() const noexcept { return config_; }
  uint64_t reloads() const;

 private:
  explicit TlsContext(const TlsConfig& config) : config_(config) {}
  void MaybeReload();

  const TlsConfig config_;
  mutable std::mutex mutex_;
  std::shared_ptr<const TlsContextState> state_;
  std::chrono::steady_clock::time_point last_check_;
  int64_t files_mtime_ns_ = 0;  // sum of the files' mtimes at the last (re)load
  uint64_t reloads_ = 0;
};

}  // namespace arenarpc::net
