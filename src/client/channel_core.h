#pragma once
// ChannelCore: what a Channel shares with its calls and connections — options, its servers (one
// SubChannel, or a ServerPool following a naming service), the runtime threads (an
// EventLoopGroup) and the counters.
// Calls keep it alive (shared_ptr), so a call's timer or connection never outlives its loop.

#include <asio/ip/tcp.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "arenarpc/channel.h"
#include "cluster/server_load.h"
#include "net/event_loop_group.h"
#include "net/tls_context.h"

namespace arenarpc::client {

class ClientProtocol;
class ServerPool;
class SubChannel;

struct ChannelCounters {
  std::atomic<uint64_t> calls{0}, failed_calls{0}, timeouts{0}, retries{0}, dropped_responses{0},
      connections_opened{0}, connections_failed{0}, backup_requests{0}, servers_isolated{0},
      servers_revived{0}, circuit_breaker_trips{0}, stuck_connections{0};
  ChannelStats Snapshot() const noexcept;
};

class ChannelCore : public std::enable_shared_from_this<ChannelCore> {
 public:
  // remote_side: "ip:port" of a single server, or a cluster's naming URL.
  ChannelCore(const ChannelOptions& options, std::string remote_side);
  ~ChannelCore();
  // Exactly one of these, once, right after construction. false + *error: the core is unusable.
  void InitSingle(const asio::ip::tcp::endpoint& endpoint);
  bool InitCluster(std::unique_ptr<ServerPool> pool, std::string* error);
  ChannelCore(const ChannelCore&) = delete;
  ChannelCore& operator=(const ChannelCore&) = delete;

  // Fails every pending call, closes every connection and joins the runtime threads. Idempotent;
  // must not run on a runtime thread.
  void Shutdown();
  bool shutting_down() const noexcept { return shutting_down_.load(std::memory_order_acquire); }

  const ChannelOptions& options() const noexcept { return options_; }
  // protocol "grpc" / "h2:grpc": calls and streams go over HTTP/2.
  bool grpc() const noexcept { return grpc_; }
  // What packs this channel's requests and decodes its replies (client/client_protocol.h).
  const ClientProtocol& protocol() const noexcept { return protocol_; }
  // An empty *credential becomes ChannelOptions::auth's, if set; false: its GenerateCredential
  // failed. The credential a call sends (baidu_std authentication_data, gRPC `authorization`).
  bool ResolveCredential(std::string* credential) const;
  const std::string& remote_side() const noexcept { return remote_side_; }
  bool is_cluster() const noexcept { return pool_ != nullptr; }
  // The server of one attempt; nullptr when none is in rotation (cluster only).
  std::shared_ptr<SubChannel> SelectServer(uint64_t request_code,
                                           std::span<const cluster::ServerLoad* const> tried);
  bool needs_request_code() const noexcept { return needs_request_code_; }
  // Attempts keep their server's in-flight count and latency (the balancer reads them).
  bool tracks_load() const noexcept { return tracks_load_; }
  std::vector<ServerInfo> Servers() const;
  net::EventLoopGroup& loops() noexcept { return *loops_; }
  // Queues an async call's done on the callback threads (options.callback_threads); false when
  // the channel has none: run it on the calling (I/O) thread.
  bool PostCallback(std::function<void()> callback);
  // True on one of the channel's own threads (I/O or callback).
  bool InRuntimeThread() const noexcept;
  ChannelCounters& counters() noexcept { return counters_; }
  // options.tls: builds the TLS context (before InitSingle/InitCluster). `host` is the name of
  // Init's address, if it had one. false + *error when a file or setting is wrong.
  bool InitTls(std::string_view host, std::string* error);
  net::TlsContext* tls() const noexcept { return tls_.get(); }  // null = clear text
  // The name a TLS connection to `endpoint` sends as SNI and verifies.
  std::string TlsServerName(const asio::ip::tcp::endpoint& endpoint) const;

  // brpc's versioned-handle shape: high 32 bits = the call's slot, low 32 bits = the attempt's
  // version (2 for the first attempt, +1 per retry). Slots are unique per channel until they wrap
  // after 2^32 calls; 0 is skipped.
  uint32_t NextCallSlot() noexcept;

 private:
  const ChannelOptions options_;
  const std::string remote_side_;
  ChannelCounters counters_;
  std::atomic<uint32_t> next_slot_{1};
  std::atomic<bool> shutting_down_{false};
  const bool grpc_;
  const ClientProtocol& protocol_;
  bool needs_request_code_ = false;  // set by InitCluster
  bool tracks_load_ = false;
  std::shared_ptr<net::TlsContext> tls_;
  std::string tls_server_name_;  // options.tls.sni_host, else Init's host name
  // Members die in reverse order: servers (sockets and timers of these loops) before loops.
  std::unique_ptr<net::EventLoopGroup> callbacks_;  // null with callback_threads == 0
  std::unique_ptr<net::EventLoopGroup> loops_;
  std::shared_ptr<SubChannel> single_;  // a single-server channel's
  std::unique_ptr<ServerPool> pool_;    // a cluster channel's
};

inline constexpr int64_t MakeCorrelationId(uint32_t slot, int attempt) noexcept {
  return static_cast<int64_t>((static_cast<uint64_t>(slot) << 32) |
                              (static_cast<uint32_t>(attempt) + 2u));
}

}  // namespace arenarpc::client
