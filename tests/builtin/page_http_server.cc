#include "page_http_server.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <stdexcept>
#include <string>

namespace arenarpc::builtin {
namespace {

std::string PercentDecode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned value = 0;
    if (text[i] == '%' && i + 2 < text.size() &&
        std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16).ptr ==
            text.data() + i + 3) {
      out += static_cast<char>(value);
      i += 2;
    } else {
      out += text[i] == '+' ? ' ' : text[i];
    }
  }
  return out;
}

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

}  // namespace

BuiltinRequest ParseRequestTarget(std::string method, std::string_view target) {
  BuiltinRequest request;
  request.method = std::move(method);
  const size_t question = target.find('?');
  request.path = PercentDecode(target.substr(0, question));
  if (question == std::string_view::npos) return request;
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const size_t eq = pair.find('=');
    request.query[PercentDecode(pair.substr(0, eq))] =
        eq == std::string_view::npos ? "" : PercentDecode(pair.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return request;
}

PageHttpServer::PageHttpServer(const BuiltinRegistry& registry) : registry_(registry) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      listen(fd, 16) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (fd >= 0) close(fd);
    throw std::runtime_error("PageHttpServer: cannot listen on 127.0.0.1");
  }
  port_ = ntohs(address.sin_port);
  thread_ = std::thread([this, fd] { Loop(fd); });
}

PageHttpServer::~PageHttpServer() {
  stop_.store(true);
  thread_.join();
}

void PageHttpServer::Loop(int listen_fd) {
  while (!stop_.load()) {
    pollfd poll_fd{listen_fd, POLLIN, 0};
    if (poll(&poll_fd, 1, 20) <= 0) continue;
    const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Serve(fd);
    close(fd);
  }
  close(listen_fd);
}

void PageHttpServer::Serve(int fd) {
  std::string head;
  char buffer[4096];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < 65536) {
    pollfd poll_fd{fd, POLLIN, 0};
    if (poll(&poll_fd, 1, 5000) <= 0) return;
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n <= 0) return;
    head.append(buffer, static_cast<size_t>(n));
  }
  // "GET /path?query HTTP/1.1"
  const size_t space1 = head.find(' ');
  const size_t space2 = head.find(' ', space1 + 1);
  if (space1 == std::string::npos || space2 == std::string::npos) return;
  const BuiltinRequest request = ParseRequestTarget(
      head.substr(0, space1), std::string_view(head).substr(space1 + 1, space2 - space1 - 1));
  BuiltinReply reply;
  if (const BuiltinHandler* handler = registry_.Find(request.path)) {
    (*handler)(request, &reply);
  } else {
    reply.status = 404;
    reply.body = "no page " + request.path + "\n";
  }
  std::string response = "HTTP/1.1 " + std::to_string(reply.status) + " " + Reason(reply.status) +
                         "\r\nContent-Type: " + reply.content_type +
                         "\r\nContent-Length: " + std::to_string(reply.body.size()) +
                         "\r\nConnection: close\r\n";
  for (const auto& [name, value] : reply.headers) response += name + ": " + value + "\r\n";
  response += "\r\n";
  if (request.method != "HEAD") response += reply.body;
  for (size_t sent = 0; sent < response.size();) {
    const ssize_t n = write(fd, response.data() + sent, response.size() - sent);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
  served_.fetch_add(1);
}

std::optional<std::string> HttpGet(int port, std::string_view target, int* status) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  timeval timeout{5, 0};
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
