#pragma once
// Resolving the press's --server "host:port" ("[v6]:port" too) for its Asio-based HTTP clients.

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>

#include <string>

namespace arenarpc::press {

// Resolves once (the first address). host_header gets "host:port" as an HTTP Host header wants
// it. False with *error on failure.
bool ResolveHostPort(const std::string& host_port, asio::io_context& context,
                     asio::ip::tcp::endpoint* endpoint, std::string* host_header,
                     std::string* error);

}  // namespace arenarpc::press
