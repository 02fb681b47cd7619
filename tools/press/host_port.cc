#include "press/host_port.h"

namespace arenarpc::press {

bool ResolveHostPort(const std::string& host_port, asio::io_context& context,
                     asio::ip::tcp::endpoint* endpoint, std::string* host_header,
                     std::string* error) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    *error = "server address '" + host_port + "' is not host:port";
    return false;
  }
  std::string host = host_port.substr(0, colon);
  const std::string port = host_port.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  asio::error_code ec;
  asio::ip::tcp::resolver resolver(context);
  const auto results = resolver.resolve(host, port, asio::ip::resolver_base::numeric_service, ec);
  if (ec || results.empty()) {
    *error = "cannot resolve '" + host_port + "': " + (ec ? ec.message() : "no address");
    return false;
  }
  *endpoint = results.begin()->endpoint();
  *host_header = host_port;
  return true;
}

}  // namespace arenarpc::press
