#pragma once
// MaxConcurrency: a server's bound on calls in flight (decoded and not yet answered), as brpc
// spells it: a number (0 = unlimited) or "auto" for the adaptive limiter (docs/server.md).
//
//   options.max_concurrency = 64;        // fixed
//   options.max_concurrency = "auto";    // adaptive
//   options.max_concurrency = "unlimited";
//
// A string that is none of these is kept as given and rejected by Server::Start() with a message.

#include <string>
#include <string_view>

namespace arenarpc {

class MaxConcurrency {
 public:
  MaxConcurrency(int limit = 0) : limit_(limit), spec_(std::to_string(limit)) {}  // NOLINT
  MaxConcurrency(const char* spec) : MaxConcurrency(std::string_view(spec)) {}    // NOLINT
  MaxConcurrency(const std::string& spec) : MaxConcurrency(std::string_view(spec)) {}  // NOLINT
  MaxConcurrency(std::string_view spec);                                          // NOLINT

  bool is_auto() const noexcept { return auto_; }
  // The fixed limit; 0 = unlimited (also when is_auto()).
  int fixed_limit() const noexcept { return limit_; }
  // Empty when valid, else why not.
  const std::string& error() const noexcept { return error_; }
  const std::string& spec() const noexcept { return spec_; }  // as given

 private:
  int limit_ = 0;
  bool auto_ = false;
  std::string spec_;
  std::string error_;
};

}  // namespace arenarpc
