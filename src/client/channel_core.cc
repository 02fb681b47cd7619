#include "client/channel_core.h"

#include <asio/post.hpp>

#include <cstdlib>

#include "arenarpc/logging.h"
#include "client/client_protocol.h"
#include "client/connection_manager.h"
#include "client/option_checks.h"
#include "client/server_pool.h"
#include "client/sub_channel.h"
#include "net/endpoint.h"

namespace arenarpc::client {

ChannelStats ChannelCounters::Snapshot() const noexcept {
  ChannelStats s;
  s.calls = calls.load(std::memory_order_relaxed);
  s.failed_calls = failed_calls.load(std::memory_order_relaxed);
  s.timeouts = timeouts.load(std::memory_order_relaxed);
  s.retries = retries.load(std::memory_order_relaxed);
  s.dropped_responses = dropped_responses.load(std::memory_order_relaxed);
  s.connections_opened = connections_opened.load(std::memory_order_relaxed);
  s.connections_failed = connections_failed.load(std::memory_order_relaxed);
  s.backup_requests = backup_requests.load(std::memory_order_relaxed);
  s.servers_isolated = servers_isolated.load(std::memory_order_relaxed);
  s.servers_revived = servers_revived.load(std::memory_order_relaxed);
  s.circuit_breaker_trips = circuit_breaker_trips.load(std::memory_order_relaxed);
  s.stuck_connections = stuck_connections.load(std::memory_order_relaxed);
  return s;
}

ChannelCore::ChannelCore(const ChannelOptions& options, std::string remote_side)
    : options_(options),
      remote_side_(std::move(remote_side)),
      grpc_(options.protocol == ChannelProtocol::kGrpc),
      protocol_(grpc_ ? GrpcClientProtocol() : BaiduStdClientProtocol()),
      callbacks_(options.callback_threads > 0
                     ? std::make_unique<net::EventLoopGroup>(options.callback_threads, "arpc-done")
                     : nullptr),
      loops_(std::make_unique<net::EventLoopGroup>(options.io_threads, "arpc-client")) {}

ChannelCore::~ChannelCore() { Shutdown(); }

bool ChannelCore::InitTls(std::string_view host, std::string* error) {
  const ChannelTlsOptions& o = options_.tls;
  if (!o.enable) return true;
  net::TlsConfig config = net::CommonTlsConfig(o, /*server=*/false);
  config.ca_file = o.ca_file;
  config.verify_peer = o.verify;
  // gRPC servers take HTTP/2 over TLS only when ALPN agreed on "h2" (RFC 7540, 3.3).
  if (grpc_) config.alpn = {"h2"};
  std::string build_error;
  tls_ = net::TlsContext::Create(config, &build_error);
  if (!tls_) {
    *error = "invalid ChannelOptions: tls: " + build_error;
    return false;
  }
  tls_server_name_ = !o.sni_host.empty() ? o.sni_host : std::string(host);
  return true;
}

bool ChannelCore::ResolveCredential(std::string* credential) const {
  if (options_.auth == nullptr || !credential->empty()) return true;
  return options_.auth->GenerateCredential(credential) == 0;
}

std::string ChannelCore::TlsServerName(const asio::ip::tcp::endpoint& endpoint) const {
  return !tls_server_name_.empty() ? tls_server_name_ : endpoint.address().to_string();
}

void ChannelCore::InitSingle(const asio::ip::tcp::endpoint& endpoint) {
  cluster::ServerNode node;
  node.endpoint = endpoint;
  single_ = std::make_shared<SubChannel>(this, std::move(node), /*health_checked=*/false);
}

bool ChannelCore::InitCluster(std::unique_ptr<ServerPool> pool, std::string* error) {
  pool_ = std::move(pool);
  needs_request_code_ = pool_->needs_request_code();
  tracks_load_ = pool_->tracks_load();
  return pool_->Start(error);
}

std::shared_ptr<SubChannel> ChannelCore::SelectServer(
    uint64_t request_code, std::span<const cluster::ServerLoad* const> tried) {
  if (single_) return single_;
  return pool_->Select(request_code, tried);
}

std::vector<ServerInfo> ChannelCore::Servers() const {
  if (pool_) return pool_->Servers();
  if (!single_) return {};
  return {ServerInfo{single_->remote_side(), 1, {}, true, single_->selected()}};
}

void ChannelCore::Shutdown() {
  if (InRuntimeThread()) {
    // Joining the runtime threads from one of them cannot work; this is a caller bug.
    Log(LogLevel::kError, "a Channel was destroyed from its own done callback");
    std::abort();
  }
  if (shutting_down_.exchange(true, std::memory_order_acq_rel)) return;
  // Closing fails every pending call (their retries find the manager closed); the loops then
  // drain the queued handlers and their threads end.
  if (pool_) pool_->Close();
  if (single_) single_->Close();
  loops_->Stop();
  // After the I/O threads: the dones they queued (the failed pending calls') still run.
  if (callbacks_) callbacks_->Stop();
}

bool ChannelCore::PostCallback(std::function<void()> callback) {
  if (!callbacks_) return false;
  asio::post(callbacks_->Next(), std::move(callback));
  return true;
}

bool ChannelCore::InRuntimeThread() const noexcept {
  return loops_->InLoopThread() || (callbacks_ && callbacks_->InLoopThread());
}

uint32_t ChannelCore::NextCallSlot() noexcept {
  uint32_t slot = next_slot_.fetch_add(1, std::memory_order_relaxed);
  if (slot == 0) slot = next_slot_.fetch_add(1, std::memory_order_relaxed);  // wrapped
  return slot;
}

}  // namespace arenarpc::client
