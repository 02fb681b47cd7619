#include "server/server_tls.h"

#include <limits>

#include "net/tls_session.h"
#include "protocol/wire_protocol.h"
#include "server/server_state.h"

namespace arenarpc::server {
namespace {

// What ALPN agrees on, in the server's preference order. The protocol itself is still told from
// the first plaintext bytes (HTTP/2 by its preface). HTTP/1.1 first: the port serves gRPC over
// HTTP/2 but not plain HTTP/2 requests, so a client offering both (curl, browsers) gets HTTP/1.1,
// and a gRPC client, which offers "h2" alone, gets h2.
const std::vector<std::string>& AlpnProtocols() {
  static const std::vector<std::string> protocols = {"http/1.1", "h2"};
  return protocols;
}

}  // namespace

std::shared_ptr<net::TlsContext> MakeServerTlsContext(const ServerTlsOptions& options,
                                                      std::string* error) {
  error->clear();
  if (options.cert_file.empty() && options.key_file.empty()) {
    if (options.require_tls) *error = "tls.require_tls needs tls.cert_file and tls.key_file";
    if (!options.client_ca_file.empty()) *error = "tls.client_ca_file needs tls.cert_file and tls.key_file";
    return nullptr;
  }
  if (options.reload_check_interval.count() < 0 ||
      options.reload_check_interval.count() > std::numeric_limits<int>::max()) {
    *error = "tls.reload_check_interval=" + std::to_string(options.reload_check_interval.count()) +
             " ms is invalid (expected 0 .. 2147483647 ms; 0 = only ReloadTlsCertificates())";
    return nullptr;
  }
  net::TlsConfig config = net::CommonTlsConfig(options, /*server=*/true);
  config.ca_file = options.client_ca_file;
  config.alpn = AlpnProtocols();
  config.reload_check_interval_ms = static_cast<int>(options.reload_check_interval.count());
  std::string build_error;
  auto context = net::TlsContext::Create(config, &build_error);
  if (!context) *error = "tls: " + build_error;
  return context;
}

Transport ChooseTransport(ServerState& state, net::Connection& connection,
                          const net::BufferChain& input) {
  const protocol::WireProtocol wire = protocol::RecognizeProtocol(input);
  if (wire == protocol::WireProtocol::kNeedMore) return Transport::kNeedMore;
  // Without a certificate a ClientHello is one more unknown protocol (malformed_frames).
  if (wire != protocol::WireProtocol::kTls || !state.config.tls) {
    if (!state.config.options.tls.require_tls) return Transport::kClearText;
    state.counters.tls_refused.fetch_add(1, std::memory_order_relaxed);
    state.counters.malformed_log.Log("closing connection from " + connection.remote_side() +
                                     ": clear text on a port that requires TLS (tls.require_tls)");
    return Transport::kRefused;
  }
  std::string error;
  std::unique_ptr<net::TlsSession> session = state.config.tls->NewSession({}, &error);
  if (!session) {
    state.counters.tls_failures.fetch_add(1, std::memory_order_relaxed);
    state.counters.malformed_log.Log("closing connection from " + connection.remote_side() +
                                     ": TLS: " + error);
    return Transport::kRefused;
  }
  connection.StartTls(std::move(session));
  return Transport::kTls;
}

}  // namespace arenarpc::server
