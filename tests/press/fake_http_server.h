#pragma once
// FakeHttpServer: a loopback HTTP/1.1 server for the press's HTTP client tests. Each connection
// gets its own thread; each request (Content-Length bodies) is answered with the bytes `answer`
// returns for it, in order (so pipelined requests get pipelined answers).

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace arenarpc::press {

struct FakeHttpRequest {
  std::string request_line;  // "POST /a.B/C HTTP/1.1"
  std::string headers;       // raw header block
  std::string body;
};

class FakeHttpServer {
 public:
  using Answer = std::function<std::string(const FakeHttpRequest&)>;

  explicit FakeHttpServer(Answer answer) : answer_(std::move(answer)) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(listen_fd_, 16) != 0 ||
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }
  ~FakeHttpServer() {
    stop_ = true;
    if (acceptor_.joinable()) acceptor_.join();
    for (auto& t : connections_) t.join();
    close(listen_fd_);
  }

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int requests() const { return requests_.load(); }
  int connections() const { return accepted_.load(); }
  std::vector<FakeHttpRequest> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  // Waits until fd is readable or the server stops; false when stopping.
  bool WaitReadable(int fd) {
    while (!stop_) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 20) > 0) return true;
    }
    return false;
  }
  void AcceptLoop() {
    while (WaitReadable(listen_fd_)) {
      const int fd = accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      accepted_.fetch_add(1);
      connections_.emplace_back([this, fd] { Serve(fd); });
    }
  }
  void Serve(int fd) {
    std::string in;
    char buf[16384];
    bool open = true;
    while (open && WaitReadable(fd)) {
      const ssize_t n = read(fd, buf, sizeof buf);
      if (n <= 0) break;
      in.append(buf, static_cast<size_t>(n));
      FakeHttpRequest request;
      while (open && Extract(&in, &request)) {
        {
          std::lock_guard lock(mu_);
          seen_.push_back(request);
        }
        requests_.fetch_add(1);
        const std::string reply = answer_(request);
        if (reply.empty()) {  // the answer "" closes the connection without a reply
          open = false;
          break;
        }
        if (send(fd, reply.data(), reply.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(reply.size())) {
          open = false;  // the client went away (MSG_NOSIGNAL: no SIGPIPE)
        }
        if (reply.find("Connection: close") != std::string::npos) open = false;
      }
    }
    close(fd);
  }
  static bool Extract(std::string* in, FakeHttpRequest* out) {
    const size_t end = in->find("\r\n\r\n");
    if (end == std::string::npos) return false;
    const size_t line_end = in->find("\r\n");
    std::string headers = in->substr(line_end + 2, end - line_end - 2);
    std::string lower = headers;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    size_t length = 0;
    if (const size_t at = lower.find("content-length:"); at != std::string::npos) {
      length = std::stoul(lower.substr(at + 15));
    }
    if (in->size() < end + 4 + length) return false;
    out->request_line = in->substr(0, line_end);
    out->headers = std::move(headers);
    out->body = in->substr(end + 4, length);
    in->erase(0, end + 4 + length);
    return true;
  }

  Answer answer_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0}, accepted_{0};
  std::thread acceptor_;
  std::vector<std::thread> connections_;  // touched by the acceptor thread only until ~
  std::mutex mu_;
  std::vector<FakeHttpRequest> seen_;
};

inline std::string HttpReply(int status, const std::string& body,
                             const std::string& extra_headers = "") {
  return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: application/json\r\n" +
         extra_headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace arenarpc::press
