#pragma once
// RunCommand: runs a shell command (curl, gzip, openssl, python3) and returns its stdout.

#include <cstdio>
#include <string>

namespace arenarpc::e2e {

inline std::string RunCommand(const std::string& command) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return output;
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof(chunk), pipe)) > 0) output.append(chunk, n);
  pclose(pipe);
  return output;
}

}  // namespace arenarpc::e2e
