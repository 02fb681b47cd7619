#pragma once
// Reads a server's /vars page over HTTP on its RPC port (GET /vars, one short-lived connection).

#include <chrono>
#include <string>

namespace arenarpc::press {

// The body of GET /vars from host:port, or false with *error saying why in one line (nothing
// listening, the server does not answer HTTP, a non-200 status, the timeout).
bool FetchVars(const std::string& host_port, std::chrono::milliseconds timeout, std::string* body,
               std::string* error);

}  // namespace arenarpc::press
