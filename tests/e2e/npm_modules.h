#pragma once
// NpmModules: npm packages for the tests' Node clients, installed once into the build tree
// (ARENARPC_NPM_DIR) under a lock (several tests may run at once) and reused afterwards.

#include <string>
#include <vector>

#include "../press/run_shell.h"

namespace arenarpc::e2e {

// `packages` ("@grpc/grpc-js@1"): each is installed unless its package.json is there. The
// node_modules directory, or empty when npm could not install them (*why: npm's output).
inline std::string NpmModules(const std::string& dir, const std::vector<std::string>& packages,
                              std::string* why) {
  std::string present = "true", specs;
  for (const std::string& package : packages) {
    const std::string name = package.substr(0, package.rfind('@'));
    present += " && [ -f " + dir + "/node_modules/" + name + "/package.json ]";
    specs += " " + package;
  }
  const press::ShellOutput out = press::RunShell(
      "mkdir -p " + dir + " && flock " + dir + ".lock sh -c '" + present +
      " || timeout 300 npm install --prefix " + dir + " --no-audit --no-fund" + specs + "'");
  *why = out.out;
  return out.exit_code == 0 ? dir + "/node_modules" : std::string();
}

}  // namespace arenarpc::e2e
