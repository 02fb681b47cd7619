#pragma once
// Runs a command line through the shell for the press's end-to-end tests.

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <regex>
#include <string>

namespace arenarpc::press {

struct ShellOutput {
  int exit_code = -1;
  std::string out;  // stdout and stderr, in that order
};

inline ShellOutput RunShell(const std::string& command) {
  ShellOutput result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) result.out.append(buf.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The number after "key": in a JSON report, -1 when absent.
inline double JsonNumber(const std::string& json, const std::string& key) {
  const std::regex re("\"" + key + "\":(-?[0-9.e+]+)");
  std::smatch m;
  return std::regex_search(json, m, re) ? std::stod(m[1]) : -1;
}

}  // namespace arenarpc::press
