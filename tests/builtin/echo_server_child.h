#pragma once
// EchoServer: examples/echo_server as a child process of a test, on a free port it reports.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"

namespace arenarpc::builtin {

using namespace std::chrono_literals;

// echo_server (ECHO_SERVER_BIN) on a free port, started through env(1) with `environment`
// ("NAME=value") and `flags` after its own (--address=127.0.0.1:0 --threads=1 --mode=heap).
class EchoServer {
 public:
  EchoServer(std::vector<std::string> environment, const std::string& test,
             std::vector<std::string> flags = {})
      : log_{::testing::TempDir() + test + "_echo_server_" + std::to_string(getpid()) + "_" +
             std::to_string(++count_) + ".log"},
        process_(Argv(std::move(environment), std::move(flags)), log_.path) {
    static const std::regex kListening(R"(listening on 127\.0\.0\.1:(\d+))");
    for (const auto until = std::chrono::steady_clock::now() + 20s;
         port_ == 0 && std::chrono::steady_clock::now() < until && process_.running();) {
      std::ifstream in(log_.path);
      std::stringstream text;
      text << in.rdbuf();
      std::smatch m;
      const std::string log = text.str();
      if (std::regex_search(log, m, kListening)) port_ = std::stoi(m[1]);
      if (port_ == 0) std::this_thread::sleep_for(20ms);
    }
  }
  int port() const { return port_; }
  std::string log() const {
    std::ifstream in(log_.path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  static std::vector<std::string> Argv(std::vector<std::string> environment,
                                       std::vector<std::string> flags) {
    std::vector<std::string> argv = {"/usr/bin/env"};
    for (std::string& variable : environment) argv.push_back(std::move(variable));
    argv.insert(argv.end(), {ECHO_SERVER_BIN, "--address=127.0.0.1:0", "--threads=1",
                             "--mode=heap"});
    for (std::string& flag : flags) argv.push_back(std::move(flag));
    return argv;
  }
  // The server's log, removed once the server has exited unless the test failed (then it is
  // kept for reading). Declared before process_, so it outlives the process.
  struct Log {
    std::string path;
    ~Log() {
      if (!::testing::Test::HasFailure()) std::remove(path.c_str());
    }
  };
  static inline int count_ = 0;
  Log log_;
  ChildProcess process_;
  int port_ = 0;
};

}  // namespace arenarpc::builtin
