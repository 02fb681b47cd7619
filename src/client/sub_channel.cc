#include "client/sub_channel.h"

#include <asio/post.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include <array>

#include "arenarpc/error_codes.h"

#include "client/channel_core.h"
#include "client/connection_manager.h"
#include "net/endpoint.h"
#include "net/tls_session.h"

namespace arenarpc::client {

struct SubChannel::Probe {
  explicit Probe(asio::io_context& loop) : loop(loop), timer(loop), socket(loop) {}
  asio::io_context& loop;
  asio::steady_timer timer;
  asio::ip::tcp::socket socket;
  bool connect_timed_out = false;
  std::string request;   // the HTTP probe's
  std::string reply;     // what was read of the reply so far
  std::array<char, 512> buffer;
  std::unique_ptr<net::TlsSession> tls;  // TLS channels
  bool request_sent = false;
};

SubChannel::SubChannel(ChannelCore* core, cluster::ServerNode node, bool health_checked)
    : ServerLoad(std::move(node)),
      core_(core),
      remote_side_(net::EndpointToString(endpoint())),
      health_checked_(health_checked),
      connections_(ConnectionManager::Create(core->options().connection_type.value(), core, this)) {}

SubChannel::~SubChannel() = default;

void SubChannel::OnAttemptOutcome(bool failed) noexcept {
  if (!health_checked_ || !core_->options().enable_circuit_breaker) return;
  if (failed) window_failures_.fetch_add(1, std::memory_order_relaxed);
  if (window_attempts_.fetch_add(1, std::memory_order_relaxed) + 1 < kBreakerWindow) return;
  // One thread closes the window (approximately: outcomes racing with the reset may move to the
  // next window).
  const uint32_t attempts = window_attempts_.exchange(0, std::memory_order_relaxed);
  const uint32_t failures = window_failures_.exchange(0, std::memory_order_relaxed);
  if (attempts >= kBreakerWindow && failures * 2 >= attempts) {
    core_->counters().circuit_breaker_trips.fetch_add(1, std::memory_order_relaxed);
    Isolate();
  }
}

void SubChannel::Isolate() {
  if (!health_checked_ || closed() || core_->shutting_down()) return;
  if (!healthy_.exchange(false, std::memory_order_acq_rel)) return;  // already probing
  core_->counters().servers_isolated.fetch_add(1, std::memory_order_relaxed);
  auto probe = std::make_shared<Probe>(core_->loops().Next());
  {
    std::lock_guard lock(mutex_);
    if (closed()) return;
    probe_ = probe;
  }
  asio::post(probe->loop, [self = shared_from_this(), probe] { self->ScheduleProbe(probe); });
}

void SubChannel::ScheduleProbe(const std::shared_ptr<Probe>& probe) {
  if (closed()) return;
  probe->timer.expires_after(core_->options().health_check_interval);
  probe->timer.async_wait([weak = weak_from_this(), probe](const asio::error_code& error) {
    auto self = weak.lock();
    if (!error && self) self->RunProbe(probe);
  });
}

void SubChannel::RunProbe(const std::shared_ptr<Probe>& probe) {
  if (closed()) return;
  asio::error_code ignored;
  probe->socket.close(ignored);
  probe->connect_timed_out = false;
  const int64_t timeout_ms = core_->options().connect_timeout_ms;
  if (timeout_ms > 0) {
    probe->timer.expires_after(std::chrono::milliseconds(timeout_ms));
    probe->timer.async_wait([probe](const asio::error_code& error) {
      if (error) return;
      probe->connect_timed_out = true;
      asio::error_code ignored;
      probe->socket.close(ignored);
    });
  }
  probe->socket.async_connect(
      endpoint(), [weak = weak_from_this(), probe](const asio::error_code& error) {
        probe->timer.cancel();
        auto self = weak.lock();
        if (!self || self->closed()) return;
        if (error) {
          self->ScheduleProbe(probe);
          return;
        }
        if (self->core_->tls() != nullptr) {
          self->ProbeTls(probe);
        } else if (self->core_->options().health_check_path.empty()) {
          self->Revive(probe);
        } else {
          self->ProbeHttp(probe);
        }
      });
}

void SubChannel::ProbeHttp(const std::shared_ptr<Probe>& probe) {
  const ChannelOptions& options = core_->options();
  probe->timer.expires_after(options.health_check_timeout);
  probe->timer.async_wait([probe](const asio::error_code& error) {
    if (error) return;
    asio::error_code ignored;
    probe->socket.close(ignored);  // the pending write or read fails: the probe failed
  });
  probe->request = "GET " + options.health_check_path + " HTTP/1.1\r\nHost: " + remote_side_ +
                   "\r\nConnection: close\r\n\r\n";
  probe->reply.clear();
  asio::async_write(
      probe->socket, asio::buffer(probe->request),
      [weak = weak_from_this(), probe](const asio::error_code& error, size_t) {
        auto self = weak.lock();
        if (!self || self->closed()) return;
        if (error) {
          self->ScheduleProbe(probe);
          return;
        }
        self->ReadProbeStatus(probe);
      });
}

void SubChannel::ReadProbeStatus(const std::shared_ptr<Probe>& probe) {
  probe->socket.async_read_some(
      asio::buffer(probe->buffer),
      [weak = weak_from_this(), probe](const asio::error_code& error, size_t n) {
        auto self = weak.lock();
        if (!self || self->closed()) return;
        if (!error) probe->reply.append(probe->buffer.data(), n);
        const size_t eol = probe->reply.find("\r\n");
        if (eol == std::string::npos && !error && probe->reply.size() < 4096) {
          self->ReadProbeStatus(probe);
          return;
        }
        if (ProbeStatusOk(probe->reply)) {
          self->Revive(probe);
        } else {
          self->ScheduleProbe(probe);
        }
      });
}

bool SubChannel::ProbeStatusOk(std::string_view reply) {
  const std::string_view line = reply.substr(0, reply.find("\r\n"));
  return line.size() >= 12 && line.starts_with("HTTP/1.") && line.substr(8, 4) == " 200";
}

void SubChannel::ProbeTls(const std::shared_ptr<Probe>& probe) {
  const ChannelOptions& options = core_->options();
  std::string error;
  probe->tls = core_->tls()->NewSession(core_->TlsServerName(endpoint()), &error);
  if (!probe->tls) {
    ScheduleProbe(probe);
    return;
  }
  probe->request_sent = false;
  probe->reply.clear();
  probe->timer.expires_after(options.health_check_timeout);
  probe->timer.async_wait([probe](const asio::error_code& error) {
    if (error) return;
    asio::error_code ignored;
    probe->socket.close(ignored);  // the pending write or read fails: the probe failed
  });
  probe->tls->StartHandshake();
  ProbeTlsStep(probe);
}

void SubChannel::ProbeTlsStep(const std::shared_ptr<Probe>& probe) {
  const std::string& path = core_->options().health_check_path;
  net::BufferChain out;
  if (probe->tls->handshake_done()) {
    if (path.empty()) {
      Revive(probe);
      return;
    }
    if (!probe->request_sent) {
      probe->request_sent = true;
      net::BufferChain plain;
      plain.Append("GET " + path + " HTTP/1.1\r\nHost: " + remote_side_ +
                   "\r\nConnection: close\r\n\r\n");
      probe->tls->Encrypt(plain, out, [](size_t, size_t) {});
    } else if (probe->reply.find("\r\n") != std::string::npos || probe->reply.size() >= 4096) {
      if (ProbeStatusOk(probe->reply)) {
        Revive(probe);
      } else {
        ScheduleProbe(probe);
      }
      return;
    }
  }
  probe->tls->TakeOutput(out);
  if (!out.empty()) {
    probe->request = out.ToString();
    asio::async_write(probe->socket, asio::buffer(probe->request),
                      [weak = weak_from_this(), probe](const asio::error_code& error, size_t) {
                        auto self = weak.lock();
                        if (!self || self->closed()) return;
                        if (error) {
                          self->ScheduleProbe(probe);
                        } else {
                          self->ProbeTlsStep(probe);
                        }
                      });
    return;
  }
  probe->socket.async_read_some(
      asio::buffer(probe->buffer),
      [weak = weak_from_this(), probe](const asio::error_code& error, size_t n) {
        auto self = weak.lock();
        if (!self || self->closed()) return;
        net::BufferChain cipher, plain;
        cipher.Append(std::string_view(probe->buffer.data(), n));
        if (error || probe->tls->Decrypt(cipher, plain) != net::TlsSession::Status::kOk) {
          self->ScheduleProbe(probe);
          return;
        }
        probe->reply += plain.ToString();
        self->ProbeTlsStep(probe);
      });
}

void SubChannel::Revive(const std::shared_ptr<Probe>& probe) {
  probe->timer.cancel();
  asio::error_code ignored;
  probe->socket.close(ignored);
  {
    std::lock_guard lock(mutex_);
    if (probe_ == probe) probe_.reset();
  }
  // Connections from before the isolation may be the stuck ones: calls get fresh ones.
  connections_->CloseOpen(EFAILEDSOCKET, "Connection to " + remote_side_ +
                                             " replaced: the server was out of rotation");
  core_->counters().servers_revived.fetch_add(1, std::memory_order_relaxed);
  healthy_.store(true, std::memory_order_release);
}

void SubChannel::Retire(std::chrono::milliseconds grace) {
  auto timer = std::make_shared<asio::steady_timer>(core_->loops().Next());
  {
    std::lock_guard lock(mutex_);
    if (closed()) return;
    retire_timer_ = timer;
  }
  asio::post(timer->get_executor(), [self = shared_from_this(), timer, grace] {
    if (self->closed()) return;
    timer->expires_after(grace);
    timer->async_wait([weak = self->weak_from_this()](const asio::error_code& error) {
      if (auto self = weak.lock(); self && !error) self->Close();
    });
  });
}

void SubChannel::Close() {
  std::shared_ptr<Probe> probe;
  std::shared_ptr<asio::steady_timer> retire_timer;
  {
    std::lock_guard lock(mutex_);
    if (closed_.exchange(true, std::memory_order_acq_rel)) return;
    probe = std::move(probe_);
    retire_timer = std::move(retire_timer_);
  }
  if (probe) {
    asio::post(probe->loop, [probe] {
      probe->timer.cancel();
      asio::error_code ignored;
      probe->socket.close(ignored);
    });
  }
  if (retire_timer) asio::post(retire_timer->get_executor(), [retire_timer] { retire_timer->cancel(); });
  connections_->CloseAll();
}

}  // namespace arenarpc::client
