#include "net/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <asio/ip/address.hpp>

#include "net/tls_session.h"
#include "net/tls_state.h"

namespace arenarpc::net {
namespace {

std::string OpenSslErrors() {
  std::string text;
  while (unsigned long code = ERR_get_error()) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof(buffer));
    if (!text.empty()) text += "; ";
    text += buffer;
  }
  return text.empty() ? "unknown OpenSSL error" : text;
}

constexpr const char* kDefaultSuites =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";

int64_t MtimeNs(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return 0;
  return int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
}

// Server: the first protocol of ours (in our order) that the client offers.
int SelectAlpn(SSL*, const unsigned char** out, unsigned char* out_len, const unsigned char* in,
               unsigned int in_len, void* arg) {
  const auto& ours = *static_cast<const std::string*>(arg);
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, out_len, reinterpret_cast<const unsigned char*>(ours.data()),
                            static_cast<unsigned>(ours.size()), in,
                            in_len) != OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;  // no common protocol: go on without ALPN
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

bool OpenSslVersion(TlsVersion version, int* openssl_version) {
  switch (version) {
    case TlsVersion::kTls12: *openssl_version = TLS1_2_VERSION; return true;
    case TlsVersion::kTls13: *openssl_version = TLS1_3_VERSION; return true;
  }
  return false;
}

std::shared_ptr<const TlsContextState> Build(const TlsConfig& config, std::string* error) {
  ERR_clear_error();
  auto state = std::make_shared<TlsContextState>();
  state->ctx = SSL_CTX_new(config.server ? TLS_server_method() : TLS_client_method());
  if (state->ctx == nullptr) {
    *error = "SSL_CTX_new: " + OpenSslErrors();
    return nullptr;
  }
  SSL_CTX* ctx = state->ctx;
  int min_version = 0;
  if (!OpenSslVersion(config.min_version, &min_version)) {
    *error = "min_version=" + std::to_string(static_cast<int>(config.min_version)) +
             " is not a TlsVersion";
    return nullptr;
  }
  SSL_CTX_set_min_proto_version(ctx, min_version);
  // Renegotiation (TLS 1.2) is refused; idle connections give their record buffers back.
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  if (!config.ciphers.empty() && SSL_CTX_set_cipher_list(ctx, config.ciphers.c_str()) != 1) {
    *error = "ciphers=\"" + config.ciphers + "\": " + OpenSslErrors();
    return nullptr;
  }
  // TLS 1.3 default: OpenSSL's suites with AES-128-GCM first (fewer AES rounds than AES-256).
  const std::string suites = !config.ciphersuites.empty() ? config.ciphersuites : kDefaultSuites;
  if (SSL_CTX_set_ciphersuites(ctx, suites.c_str()) != 1) {
    *error = "ciphersuites=\"" + config.ciphersuites + "\": " + OpenSslErrors();
    return nullptr;
  }
  if (!config.cert_file.empty() || !config.key_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, config.cert_file.c_str()) != 1) {
      *error = "cert_file=\"" + config.cert_file + "\": " + OpenSslErrors();
      return nullptr;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, config.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      *error = "key_file=\"" + config.key_file + "\": " + OpenSslErrors();
      return nullptr;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
      *error = "key_file=\"" + config.key_file + "\" does not match cert_file=\"" +
               config.cert_file + "\": " + OpenSslErrors();
      return nullptr;
    }
  } else if (config.server) {
    *error = "cert_file and key_file are required";
    return nullptr;
  }
  if (config.server) {
    if (!config.ca_file.empty()) {
      if (SSL_CTX_load_verify_locations(ctx, config.ca_file.c_str(), nullptr) != 1) {
        *error = "client_ca_file=\"" + config.ca_file + "\": " + OpenSslErrors();
        return nullptr;
      }
      if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(config.ca_file.c_str())) {
        SSL_CTX_set_client_CA_list(ctx, names);
      }
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    }
    // No stateful session cache (memory per past client); tickets still resume sessions.
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  } else if (config.verify_peer) {
    const int loaded = config.ca_file.empty()
                           ? SSL_CTX_set_default_verify_paths(ctx)
                           : SSL_CTX_load_verify_locations(ctx, config.ca_file.c_str(), nullptr);
    if (loaded != 1) {
      *error = "ca_file=\"" + config.ca_file + "\": " + OpenSslErrors();
      return nullptr;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  }
  for (const std::string& protocol : config.alpn) {
    if (protocol.empty() || protocol.size() > 255) {
      *error = "ALPN protocol \"" + protocol + "\": 1..255 bytes";
      return nullptr;
    }
    state->alpn_wire.push_back(static_cast<char>(protocol.size()));
    state->alpn_wire += protocol;
  }
  if (!state->alpn_wire.empty()) {
    if (config.server) {
      SSL_CTX_set_alpn_select_cb(ctx, SelectAlpn, &state->alpn_wire);
    } else {
      SSL_CTX_set_alpn_protos(ctx, reinterpret_cast<const unsigned char*>(state->alpn_wire.data()),
                              static_cast<unsigned>(state->alpn_wire.size()));
    }
  }
  return state;
}

}  // namespace

TlsContextState::~TlsContextState() {
  if (ctx != nullptr) SSL_CTX_free(ctx);
}

std::shared_ptr<TlsContext> TlsContext::Create(const TlsConfig& config, std::string* error) {
  std::shared_ptr<TlsContext> context(new TlsContext(config));
  if (!context->Reload(error)) return nullptr;
  context->reloads_ = 0;
  return context;
}

TlsContext::~TlsContext() = default;

bool TlsContext::Reload(std::string* error) {
  // The mtimes are taken before reading, so that a file replaced during the read is read again.
  const int64_t mtime = MtimeNs(config_.cert_file) + MtimeNs(config_.key_file) + MtimeNs(config_.ca_file);
  std::shared_ptr<const TlsContextState> state = Build(config_, error);
  if (!state) return false;
  std::lock_guard lock(mutex_);
  state_ = std::move(state);
  files_mtime_ns_ = mtime;
  last_check_ = std::chrono::steady_clock::now();
  ++reloads_;
  return true;
}

uint64_t TlsContext::reloads() const {
  std::lock_guard lock(mutex_);
  return reloads_;
}

void TlsContext::MaybeReload() {
  if (config_.reload_check_interval_ms <= 0) return;
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mutex_);
    if (now - last_check_ < std::chrono::milliseconds(config_.reload_check_interval_ms)) return;
    last_check_ = now;
    if (MtimeNs(config_.cert_file) + MtimeNs(config_.key_file) + MtimeNs(config_.ca_file) ==
        files_mtime_ns_) {
      return;
    }
  }
  std::string ignored;  // a half-written file fails to load: the current one stays, tried again
  if (!Reload(&ignored)) {
    std::lock_guard lock(mutex_);
    last_check_ = now;
  }
}

std::unique_ptr<TlsSession> TlsContext::NewSession(std::string_view server_name,
                                                   std::string* error) {
  MaybeReload();
  std::shared_ptr<const TlsContextState> state;
  {
    std::lock_guard lock(mutex_);
    state = state_;
  }
  ERR_clear_error();
  SSL* ssl = SSL_new(state->ctx);
  if (ssl == nullptr) {
    *error = "SSL_new: " + OpenSslErrors();
    return nullptr;
  }
  auto session = std::make_unique<TlsSession>(std::move(state), ssl, config_.server);
  if (!config_.server && !server_name.empty()) {
    const std::string name(server_name);
    asio::error_code not_ip;
    asio::ip::make_address(name, not_ip);
    if (not_ip) SSL_set_tlsext_host_name(ssl, name.c_str());  // SNI carries names only
    if (config_.verify_peer) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
      const int set = not_ip ? X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size())
                             : X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
      if (set != 1) {
        *error = "cannot verify the server as \"" + name + "\": " + OpenSslErrors();
        return nullptr;
      }
    }
  }
  return session;
}

}  // namespace arenarpc::net
