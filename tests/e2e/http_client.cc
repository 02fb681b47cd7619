#include "http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstring>

namespace arenarpc::e2e {

HttpClient::HttpClient(int port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ < 0) return;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

HttpClient::~HttpClient() {
  if (fd_ >= 0) ::close(fd_);
}

void HttpClient::Reset() {
  if (fd_ < 0) return;
  linger abort{1, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &abort, sizeof(abort));
  ::close(fd_);
  fd_ = -1;
}

bool HttpClient::Send(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool HttpClient::Fill(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return false;
  pollfd poll_fd{fd_, POLLIN, 0};
  if (::poll(&poll_fd, 1, static_cast<int>(left.count())) <= 0) return false;
  char chunk[16384];
  const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
  if (n <= 0) return false;
  buffer_.append(chunk, static_cast<size_t>(n));
  return true;
}

std::optional<HttpResponse> HttpClient::Read(std::chrono::milliseconds timeout, bool has_body) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  size_t end;
  while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
    if (!Fill(deadline)) return std::nullopt;
  }
  HttpResponse response;
  const std::string head = buffer_.substr(0, end + 2);
  size_t line_end = head.find("\r\n");
  const std::string status_line = head.substr(0, line_end);
  const size_t space = status_line.find(' ');
  if (space == std::string::npos) return std::nullopt;
  response.version = status_line.substr(0, space);
  response.status = std::atoi(status_line.c_str() + space + 1);
  for (size_t at = line_end + 2; at < head.size();) {
    const size_t next = head.find("\r\n", at);
    const std::string line = head.substr(at, next - at);
    at = next + 2;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    size_t value_at = colon + 1;
    while (value_at < line.size() && line[value_at] == ' ') ++value_at;
    response.headers[name] = line.substr(value_at);
  }
  buffer_.erase(0, end + 4);
  const size_t length = response.status < 200 || !has_body
                            ? 0
                            : std::strtoul(response.Header("content-length").c_str(), nullptr, 10);
  while (buffer_.size() < length) {
    if (!Fill(deadline)) return std::nullopt;
  }
  response.body = buffer_.substr(0, length);
  buffer_.erase(0, length);
  return response;
}

::testing::AssertionResult HttpClient::WaitClosed(std::chrono::milliseconds timeout) {
  auto unexpected = [](std::string_view bytes) {
    return ::testing::AssertionFailure()
           << bytes.size() << " bytes arrived instead of the close: "
           << ::testing::PrintToString(std::string(bytes.substr(0, 64)));
  };
  if (!buffer_.empty()) return unexpected(buffer_);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd poll_fd{fd_, POLLIN, 0};
    if (::poll(&poll_fd, 1, 50) <= 0) continue;
    char chunk[16384];
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n <= 0) return ::testing::AssertionSuccess();
    return unexpected(std::string_view(chunk, static_cast<size_t>(n)));
  }
  return ::testing::AssertionFailure() << "still open after " << timeout.count() << " ms";
}

std::string HttpClient::Request(std::string_view method, std::string_view path,
                                std::string_view body, std::string_view content_type,
                                std::string_view extra_headers) {
  std::string request =
      std::string(method) + " " + std::string(path) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  if (!body.empty() || method == "POST") {
    request += "Content-Type: " + std::string(content_type) +
               "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  request += extra_headers;
  request += "\r\n";
  request += body;
  return request;
}

}  // namespace arenarpc::e2e
