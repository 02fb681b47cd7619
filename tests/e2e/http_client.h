#pragma once
// HttpClient: a blocking HTTP/1.x client on a plain loopback socket for the e2e tests. It writes
// exactly the bytes a test gives (pipelined, split, malformed) and reads responses one at a time.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

namespace arenarpc::e2e {

struct HttpResponse {
  int status = 0;
  std::string version;                         // "HTTP/1.1"
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

class HttpClient {
 public:
  explicit HttpClient(int port);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  bool connected() const { return fd_ >= 0; }
  // Closes with a reset (SO_LINGER 0): the server's next write to this connection fails.
  void Reset();
  bool Send(std::string_view bytes);
  // The next response (Content-Length bodies; a 1xx has none, nor the answer to HEAD:
  // has_body = false), or nullopt on EOF/timeout/garbage.
  std::optional<HttpResponse> Read(std::chrono::milliseconds timeout = std::chrono::seconds(10),
                                   bool has_body = true);
  // Succeeds if the server closes the connection (EOF or reset) within `timeout` without one more
  // byte: anything unread from before, or arriving before the close, fails it.
  ::testing::AssertionResult WaitClosed(
      std::chrono::milliseconds timeout = std::chrono::seconds(10));

  // One request with the usual headers.
  static std::string Request(std::string_view method, std::string_view path,
                             std::string_view body = {},
                             std::string_view content_type = "application/json",
                             std::string_view extra_headers = {});

 private:
  // Reads more bytes into buffer_; false on EOF, error or timeout.
  bool Fill(std::chrono::steady_clock::time_point deadline);
  int fd_ = -1;
  std::string buffer_;
};

}  // namespace arenarpc::e2e
