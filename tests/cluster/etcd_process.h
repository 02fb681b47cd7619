#pragma once
// Child processes of the etcd tests: a real etcd on loopback (temporary data dir, free ports,
// killed and removed at the end) and echo_server processes that register in it.

#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "../free_port.h"

namespace arenarpc::testing {

inline bool PortAccepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const sockaddr_in address = LoopbackAddress(port);
  const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return ok;
}

// A child process; killed (SIGKILL) and reaped when destroyed, or when the test process dies.
class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess() { Kill(SIGKILL); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // stdout_fd: where the child's stdout goes (-1: /dev/null); stderr goes to `log`.
  bool Spawn(const std::vector<std::string>& argv, const std::string& log, int stdout_fd = -1) {
    pid_ = ::fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a test that crashes takes its children with it
      std::FILE* err = std::fopen(log.c_str(), "a");
      if (err != nullptr) ::dup2(::fileno(err), 2);
      if (stdout_fd >= 0) {
        ::dup2(stdout_fd, 1);
      } else if (err != nullptr) {
        ::dup2(::fileno(err), 1);
      }
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    return true;
  }
  void Kill(int signal) {
    if (pid_ <= 0) return;
    ::kill(pid_, signal);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  bool running() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
};

class EtcdProcess {
 public:
  EtcdProcess() {
    char pattern[] = "/tmp/arenarpc_etcd_XXXXXX";
    dir_ = ::mkdtemp(pattern);
    client_port_ = FreePort();
    peer_port_ = FreePort();
  }
  ~EtcdProcess() {
    process_.Kill(SIGKILL);
    std::error_code ignored;
    if (std::getenv("ARENARPC_KEEP_ETCD_DIR") == nullptr) std::filesystem::remove_all(dir_, ignored);
  }
  static bool Available() { return ::access("/usr/bin/etcd", X_OK) == 0; }

  // Starts (or restarts, same ports and data) and waits until the client port accepts.
  bool Start() {
    const std::string client = "http://127.0.0.1:" + std::to_string(client_port_);
    const std::string peer = "http://127.0.0.1:" + std::to_string(peer_port_);
    if (!process_.Spawn({"/usr/bin/etcd", "--name", "arenarpc-test", "--data-dir", dir_ + "/data",
                         "--listen-client-urls", client, "--advertise-client-urls", client,
                         "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                         "--initial-cluster", "arenarpc-test=" + peer, "--log-level", "error"},
                        dir_ + "/etcd.log")) {
      return false;
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (std::chrono::steady_clock::now() < end) {
      if (PortAccepts(client_port_)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  void Kill() { process_.Kill(SIGKILL); }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(client_port_); }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  int client_port_ = 0, peer_port_ = 0;
  ChildProcess process_;
};

}  // namespace arenarpc::testing
