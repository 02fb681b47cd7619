#pragma once
// One parsed HTTP/1.x request, as the server's HTTP protocol receives it.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace arenarpc::protocol {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // the request target as sent ("/status?format=json")
  std::string path;    // its path, percent-decoded ("/status")
  std::string query;   // its query, as sent ("format=json")
  int version_major = 1, version_minor = 1;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, in order
  std::string body;                                          // de-chunked
  bool keep_alive = true;  // the connection stays open after the reply (HTTP/1.1 default)
  // A Connect-Protocol-Version header came (a Connect client's unary call): noted as the headers
  // are parsed, so that brpc's HTTP calls pay no header lookup for it.
  bool connect_protocol = false;

  // How many header fields have this (lower-case) name.
  size_t HeaderCount(std::string_view lower_name) const {
    size_t count = 0;
    for (const auto& header : headers) count += header.first == lower_name ? 1 : 0;
    return count;
  }
  // The first header with this (lower-case) name, or nullptr.
  const std::string* Header(std::string_view lower_name) const {
    for (const auto& [name, value] : headers) {
      if (name == lower_name) return &value;
    }
    return nullptr;
  }
};

// "%41b+c" -> "Ab c" when `plus_is_space` (query strings), else "Ab+c". Invalid escapes are kept.
std::string PercentDecode(std::string_view text, bool plus_is_space);
// "a=1&b=x%20y&c" -> {a:1, b:"x y", c:""}; a repeated key keeps its first value.
std::vector<std::pair<std::string, std::string>> ParseQuery(std::string_view query);

}  // namespace arenarpc::protocol
