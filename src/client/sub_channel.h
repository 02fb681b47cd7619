#pragma once
// SubChannel: one server of a channel — its address, its connections (a ConnectionManager) and,
// in a cluster channel, its health: a server whose connect fails, whose connection breaks or is
// closed as stuck leaves the rotation and is probed every health_check_interval — a TCP
// connect, plus `GET health_check_path` answered with 200 within health_check_timeout when
// that option is set — until a probe passes; then its old connections are closed so that calls
// get fresh ones. A single-server channel has exactly one, never taken out of rotation.

#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "cluster/server_load.h"

namespace arenarpc::client {

class ChannelCore;
class ConnectionManager;

class SubChannel final : public cluster::ServerLoad,
                         public std::enable_shared_from_this<SubChannel> {
 public:
  // health_checked: false for a single-server channel.
  SubChannel(ChannelCore* core, cluster::ServerNode node, bool health_checked);
  ~SubChannel() override;
  SubChannel(const SubChannel&) = delete;
  SubChannel& operator=(const SubChannel&) = delete;

  const asio::ip::tcp::endpoint& endpoint() const noexcept { return node().endpoint; }
  const std::string& remote_side() const noexcept { return remote_side_; }
  ConnectionManager& connections() noexcept { return *connections_; }

  // Loop thread of a connection: connecting failed or an open connection broke.
  void OnConnectionFailed() { Isolate(); }
  // An attempt on this server ended (a call's thread); feeds the circuit breaker.
  void OnAttemptOutcome(bool failed) noexcept;
  // Removed from the naming list: no more probing; connections close after `grace` (calls in
  // flight on them may still finish).
  void Retire(std::chrono::milliseconds grace);
  // Closes every connection (pending calls fail) and stops probing and retiring. Idempotent.
  void Close();
  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }

  // Attempts sent to this server (what the press reports as its share).
  uint64_t selected() const noexcept { return selected_.load(std::memory_order_relaxed); }
  void CountSelected() noexcept { selected_.fetch_add(1, std::memory_order_relaxed); }

 private:
  struct Probe;
  static constexpr uint32_t kBreakerWindow = 20;
  // Out of rotation, probed until it accepts a connection (cluster channels only).
  void Isolate();
  void ScheduleProbe(const std::shared_ptr<Probe>& probe);
  void RunProbe(const std::shared_ptr<Probe>& probe);
  // After the probe connected: GET health_check_path, then read the status line.
  void ProbeHttp(const std::shared_ptr<Probe>& probe);
  void ReadProbeStatus(const std::shared_ptr<Probe>& probe);
  // A TLS channel's probe after the connect: the handshake (and the GET inside TLS), one step per
  // socket write or read.
  void ProbeTls(const std::shared_ptr<Probe>& probe);
  void ProbeTlsStep(const std::shared_ptr<Probe>& probe);
  // The status line of a probe's reply (what arrived so far) passes: "HTTP/1.x 200".
  static bool ProbeStatusOk(std::string_view reply);
  void Revive(const std::shared_ptr<Probe>& probe);

  ChannelCore* const core_;
  const std::string remote_side_;
  const bool health_checked_;
  std::unique_ptr<ConnectionManager> connections_;
  std::atomic<bool> closed_{false};
  std::atomic<uint64_t> selected_{0};
  std::atomic<uint32_t> window_attempts_{0}, window_failures_{0};
  std::mutex mutex_;
  std::shared_ptr<Probe> probe_;                       // while unhealthy
  std::shared_ptr<asio::steady_timer> retire_timer_;  // while retiring
};

}  // namespace arenarpc::client
