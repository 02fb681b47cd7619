#include "net/endpoint.h"

#include <asio/io_context.hpp>
#include <asio/ip/address.hpp>

#include <charconv>

namespace arenarpc::net {

bool ParseEndpoint(std::string_view text, asio::ip::tcp::endpoint* endpoint, std::string* error) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    *error = "address '" + std::string(text) + "' has no port (expected host:port)";
    return false;
  }
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  unsigned port = 0;
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
      port > 65535) {
    *error = "address '" + std::string(text) + "' has an invalid port '" + std::string(port_text) +
             "' (expected 0..65535)";
    return false;
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty() || host == "*") {
    *endpoint = asio::ip::tcp::endpoint(asio::ip::address_v4::any(), static_cast<uint16_t>(port));
    return true;
  }
  asio::error_code parse_error;
  const asio::ip::address address = asio::ip::make_address(std::string(host), parse_error);
  if (!parse_error) {
    *endpoint = asio::ip::tcp::endpoint(address, static_cast<uint16_t>(port));
    return true;
  }
  asio::io_context context;
  asio::ip::tcp::resolver resolver(context);
  asio::error_code resolve_error;
  const auto results = resolver.resolve(std::string(host), std::string(port_text), resolve_error);
  if (resolve_error || results.empty()) {
    *error = "cannot resolve host '" + std::string(host) + "': " +
             (resolve_error ? resolve_error.message() : std::string("no address"));
    return false;
  }
  *endpoint = results.begin()->endpoint();
  return true;
}

std::string EndpointToString(const asio::ip::tcp::endpoint& endpoint) {
  const asio::ip::address address = endpoint.address();
  std::string host = address.to_string();
  if (address.is_v6()) host = "[" + host + "]";
  return host + ":" + std::to_string(endpoint.port());
}

}  // namespace arenarpc::net
