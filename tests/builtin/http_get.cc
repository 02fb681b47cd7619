#include "http_get.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace arenarpc::builtin {

std::optional<std::string> HttpGet(int port, std::string_view target, int* status,
                                   std::chrono::seconds timeout_seconds) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  timeval timeout{static_cast<time_t>(timeout_seconds.count()), 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
    const std::string request = "GET " + std::string(target) +
                                " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buffer[16384];
      ssize_t n;
      while ((n = read(fd, buffer, sizeof buffer)) > 0) response.append(buffer, size_t(n));
    }
  }
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  if (!response.starts_with("HTTP/1.") || body == std::string::npos) return std::nullopt;
  if (status != nullptr) *status = std::atoi(response.c_str() + response.find(' ') + 1);
  // Chunked replies are not decoded: the servers these tests ask send Content-Length.
  return response.substr(body + 4);
}

}  // namespace arenarpc::builtin
