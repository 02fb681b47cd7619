#pragma once
// Live settings: the server's settings as /flags lists them, and the ones that change while it
// runs (brpc's reloadable flags) — through Server::SetLiveSetting() or the /flags page
// (`/flags/NAME?setvalue=VALUE`, docs/server.md "Live settings"). Every change is kept in a short
// history with who made it.
//
//   if (server.SetLiveSetting("max_concurrency", "128") != 0) log(server.last_error());
//   server.SetLiveSetting("method_memory_mode[pkg.Service.Method]", "reuse");

#include <chrono>
#include <cstddef>
#include <string>

namespace arenarpc {

// One setting as the server runs with it now.
struct ServerSetting {
  std::string name;   // "max_concurrency", "method_memory_mode[pkg.Service.Method]", ...
  std::string value;  // as SetLiveSetting() takes it
  bool live = false;  // SetLiveSetting() / ?setvalue= may change it while the server runs
  std::string help;   // live ones: the values accepted and what a change does
};

// One change made while the server ran, kept in a bounded history (the latest kSettingHistory).
struct SettingChange {
  std::chrono::system_clock::time_point when;
  // Who: "ip:port" of the HTTP client that sent ?setvalue=, or "Server::SetLiveSetting" for a
  // change made in the process; `principal`: the user ServerOptions::auth's Authenticator put in
  // the AuthContext ("" without auth or when it named nobody).
  std::string peer;
  std::string principal;
  std::string name, old_value, new_value;
};

inline constexpr size_t kSettingHistory = 64;

}  // namespace arenarpc
