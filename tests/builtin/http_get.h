#pragma once
// A blocking HTTP GET for tests that read pages from a real HTTP server (the RPC port's built-in
// pages, Prometheus's query API).

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace arenarpc::builtin {

// A blocking GET of http://127.0.0.1:<port><target> (`timeout` for each send and receive,
// Connection: close): the body, or nullopt when nothing HTTP came back; *status gets the status
// code.
std::optional<std::string> HttpGet(int port, std::string_view target, int* status = nullptr,
                                   std::chrono::seconds timeout = std::chrono::seconds(5));

}  // namespace arenarpc::builtin
