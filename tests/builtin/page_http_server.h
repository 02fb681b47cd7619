#pragma once
// PageHttpServer: a minimal HTTP responder for tests that need a real HTTP client (Prometheus,
// Chromium) on the built-in pages before the server's own port speaks HTTP. It serves a
// BuiltinRegistry on 127.0.0.1:<free port>, one GET per connection (Connection: close), until
// destroyed. Not a production server: no keep-alive, no limits beyond a 64 KiB request head.

#include <atomic>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "builtin/builtin_registry.h"

namespace arenarpc::builtin {

class PageHttpServer {
 public:
  explicit PageHttpServer(const BuiltinRegistry& registry);
  ~PageHttpServer();
  PageHttpServer(const PageHttpServer&) = delete;
  PageHttpServer& operator=(const PageHttpServer&) = delete;

  int port() const { return port_; }
  int requests_served() const { return served_.load(); }

 private:
  void Loop(int listen_fd);
  void Serve(int fd);

  const BuiltinRegistry& registry_;
  int port_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<int> served_{0};
  std::thread thread_;
};

// A blocking GET of http://127.0.0.1:<port><target> (5 s timeouts): the body, or nullopt when
// nothing HTTP came back; *status gets the status code.
std::optional<std::string> HttpGet(int port, std::string_view target, int* status = nullptr);

// "/status?format=json&x=%41" -> path "/status", query {format: json, x: A}.
BuiltinRequest ParseRequestTarget(std::string method, std::string_view target);

}  // namespace arenarpc::builtin
