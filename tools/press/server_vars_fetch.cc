#include "press/server_vars_fetch.h"

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/write.hpp>

#include <array>
#include <functional>
#include <vector>

#include "press/host_port.h"
#include "press/http_response_parser.h"

namespace arenarpc::press {

bool FetchVars(const std::string& host_port, std::chrono::milliseconds timeout, std::string* body,
               std::string* error) {
  asio::io_context context(1);
  asio::ip::tcp::endpoint endpoint;
  std::string host_header;
  if (!ResolveHostPort(host_port, context, &endpoint, &host_header, error)) return false;
  asio::ip::tcp::socket socket(context);
  const std::string request =
      "GET /vars HTTP/1.1\r\nHost: " + host_header + "\r\nConnection: close\r\n\r\n";
  std::array<char, 16 * 1024> buffer;
  HttpResponseParser parser(size_t{16} << 20);
  std::vector<HttpResponse> responses;
  bool done = false;

  std::function<void()> read = [&] {
    socket.async_read_some(asio::buffer(buffer), [&](const asio::error_code& ec, size_t n) {
      if (ec) {
        if (ec == asio::error::eof && parser.FeedEof(&responses) && !responses.empty()) {
          done = true;
        } else if (!parser.InsideResponse() && responses.empty()) {
          *error = "the server does not answer HTTP (closed the connection: " + ec.message() + ")";
        } else {
          *error = "reading /vars: " + (parser.error().empty() ? ec.message() : parser.error());
        }
        return;
      }
      if (!parser.Feed(std::string_view(buffer.data(), n), &responses)) {
        *error = "the server does not answer HTTP (" + parser.error() + ")";
        return;
      }
      if (!responses.empty()) {
        done = true;
        return;
      }
      read();
    });
  };
  socket.async_connect(endpoint, [&](const asio::error_code& ec) {
    if (ec) {
      *error = "connect to " + host_port + ": " + ec.message();
      return;
    }
    asio::async_write(socket, asio::buffer(request), [&](const asio::error_code& wec, size_t) {
      if (wec) {
        *error = "sending GET /vars: " + wec.message();
        return;
      }
      read();
    });
  });
  context.run_for(timeout);
  if (!done) {
    if (error->empty()) *error = "no answer to GET /vars within " + std::to_string(timeout.count()) + " ms";
    return false;
  }
  const HttpResponse& response = responses.front();
  if (response.status != 200) {
    *error = "GET /vars answered HTTP " + std::to_string(response.status);
    return false;
  }
  *body = response.body;
  return true;
}

}  // namespace arenarpc::press
