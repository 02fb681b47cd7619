#pragma once
// The shape of a built-in HTTP service (/status, /vars, /metrics, /health, ...): a function from a
// parsed request to a reply. Pages know nothing about sockets or the HTTP parser; the HTTP
// protocol finds a page in a BuiltinRegistry by path and sends what it returns.

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace arenarpc::builtin {

struct BuiltinRequest {
  std::string method;                          // "GET", "POST", ...
  std::string path;                            // "/status" (no query), percent-decoded
  std::map<std::string, std::string> query;    // "?format=json&prefix=rpc_" -> decoded pairs
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;
  std::string peer;       // the client's "ip:port"
  std::string principal;  // ServerOptions::auth's AuthContext user; "" without auth
};

struct BuiltinReply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::vector<std::pair<std::string, std::string>> headers;  // extra response headers
  std::string body;
};

using BuiltinHandler = std::function<void(const BuiltinRequest&, BuiltinReply*)>;

}  // namespace arenarpc::builtin
