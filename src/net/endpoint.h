#pragma once
// "host:port" text <-> TCP endpoints.

#include <asio/ip/tcp.hpp>

#include <string>
#include <string_view>

namespace arenarpc::net {

// Accepts "1.2.3.4:80", "[::1]:80", "localhost:80", "*:80" / ":80" (any address). Port 0 is
// allowed (the kernel picks one). Host names are resolved (first result). On failure returns
// false and sets *error to a message that names the problem.
bool ParseEndpoint(std::string_view text, asio::ip::tcp::endpoint* endpoint, std::string* error);

// "ip:port" ("[v6]:port" for IPv6).
std::string EndpointToString(const asio::ip::tcp::endpoint& endpoint);

}  // namespace arenarpc::net
