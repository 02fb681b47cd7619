// dns://host:port: every address the host resolves to (getaddrinfo), re-resolved every refresh
// interval on a background thread; a failed resolution keeps the last good list.
#include <netdb.h>
#include <sys/socket.h>

#include <charconv>

#include "cluster/naming_service.h"
#include "cluster/periodic_worker.h"
#include "util/rate_limited_log.h"

namespace arenarpc::cluster {
namespace {

class DnsNaming final : public NamingService {
 public:
  DnsNaming(std::string host, std::string port, std::chrono::milliseconds interval)
      : host_(std::move(host)), port_(std::move(port)), interval_(interval) {}
  ~DnsNaming() override { Stop(); }

  bool Start(Listener listener, std::string* error) override {
    listener_ = std::move(listener);
    ServerList servers;
    if (!Resolve(&servers, error)) return false;
    last_ = servers;
    listener_(std::move(servers));
    worker_.Start(interval_, [this] { Refresh(); });
    return true;
  }
  void Stop() override { worker_.Stop(); }

 private:
  bool Resolve(ServerList* servers, std::string* error) const {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* result = nullptr;
    const int rc = ::getaddrinfo(host_.c_str(), port_.c_str(), &hints, &result);
    if (rc != 0) {
      *error = "dns://" + host_ + ":" + port_ + ": cannot resolve: " + ::gai_strerror(rc);
      return false;
    }
    for (const addrinfo* ai = result; ai != nullptr; ai = ai->ai_next) {
      ServerNode node;
      if (ai->ai_family == AF_INET) {
        node.endpoint.resize(sizeof(sockaddr_in));
      } else if (ai->ai_family == AF_INET6) {
        node.endpoint.resize(sizeof(sockaddr_in6));
      } else {
        continue;
      }
      std::memcpy(node.endpoint.data(), ai->ai_addr, ai->ai_addrlen);
      servers->push_back(std::move(node));
    }
    ::freeaddrinfo(result);
    Normalize(servers);
    return true;
  }

  void Refresh() {
    ServerList servers;
    std::string error;
    if (!Resolve(&servers, &error)) {
      log_.Log(error + " (keeping the last good list)");
      return;
    }
    if (servers == last_) return;
    last_ = servers;
    listener_(std::move(servers));
  }

  const std::string host_, port_;
  const std::chrono::milliseconds interval_;
  Listener listener_;
  ServerList last_;
  util::RateLimitedLog log_{1};
  PeriodicWorker worker_;
};

}  // namespace

std::unique_ptr<NamingService> MakeDnsNaming(std::string_view target, const NamingOptions& options,
                                             std::string* error) {
  const size_t colon = target.rfind(':');
  std::string_view host = colon == std::string_view::npos ? target : target.substr(0, colon);
  const std::string_view port = colon == std::string_view::npos ? "" : target.substr(colon + 1);
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty() || port.empty() || ec != std::errc() || end != port.data() + port.size() ||
      value == 0 || value > 65535) {
    *error = "dns://" + std::string(target) + " is not host:port (port 1..65535)";
    return nullptr;
  }
  return std::make_unique<DnsNaming>(std::string(host), std::string(port),
                                     options.refresh_interval);
}

}  // namespace arenarpc::cluster
