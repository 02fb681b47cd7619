// End to end: spawns echo_server in each memory mode and runs arenarpc_press against it (open and
// closed loop, --json, --server_pid; baidu_std, and gRPC through --protocol grpc_channel); also
// checks that both binaries fail fast on bad flags.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <regex>
#include <string>

#include "run_shell.h"

namespace {

using arenarpc::press::JsonNumber;
using arenarpc::press::RunShell;
using Output = arenarpc::press::ShellOutput;

// One echo_server child on a free port; SIGTERM on destruction.
class EchoServerProcess {
 public:
  explicit EchoServerProcess(const std::string& mode) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      close(fds[1]);
      const std::string mode_flag = "--mode=" + mode;
      execl(ECHO_SERVER_BIN, ECHO_SERVER_BIN, "--address=127.0.0.1:0", "--threads=1",
            mode_flag.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[1]);
    FILE* out = fdopen(fds[0], "r");
    char line[256] = {};
    if (out != nullptr && fgets(line, sizeof line, out) != nullptr) {
      first_line_ = line;
      std::smatch m;
      static const std::regex kListening(R"(listening on 127\.0\.0\.1:(\d+) mode=(\w+) pid=(\d+))");
      if (std::regex_search(first_line_, m, kListening)) {
        port_ = std::stoi(m[1]);
        reported_pid_ = std::stoi(m[3]);
      }
    }
    if (out != nullptr) fclose(out);
  }
  ~EchoServerProcess() { Stop(); }

  int Stop() {
    if (pid_ <= 0) return exit_status_;
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return exit_status_;
  }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  int reported_pid() const { return reported_pid_; }
  const std::string& first_line() const { return first_line_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0, reported_pid_ = 0, exit_status_ = -1;
  std::string first_line_;
};

std::string Press(int port, int server_pid, const std::string& load) {
  return std::string(PRESS_BIN) + " --server=127.0.0.1:" + std::to_string(port) +
         " --server_pid=" + std::to_string(server_pid) + " --payload_scale=5 --ring=16" +
         " --warmup_s=0.3 --duration_s=1 --json --live=false " + load;
}

class PressEndToEnd : public ::testing::TestWithParam<const char*> {};

TEST_P(PressEndToEnd, OpenLoopAgainstEchoServer) {
  EchoServerProcess server(GetParam());
  ASSERT_GT(server.port(), 0) << server.first_line();
  EXPECT_EQ(server.reported_pid(), server.pid());
  EXPECT_NE(server.first_line().find(std::string("mode=") + GetParam()), std::string::npos);

  const Output r = RunShell(Press(server.port(), server.pid(), "--qps=100"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(JsonNumber(r.out, "calls_ok"), 100) << r.out;
  EXPECT_EQ(JsonNumber(r.out, "calls_failed"), 0) << r.out;
  EXPECT_NE(r.out.find("\"errors\":[]"), std::string::npos) << r.out;
  EXPECT_GT(JsonNumber(r.out, "p99"), 0) << r.out;
  EXPECT_GE(JsonNumber(r.out, "max"), JsonNumber(r.out, "p99")) << r.out;
  // Server usage over the window: valid and a plausible RSS. Its CPU may round to 0 here: 100
  // small calls cost ~10 ms, one /proc clock tick (the closed-loop test asserts CPU > 0).
  EXPECT_NE(r.out.find("\"server_usage\":{\"valid\":true"), std::string::npos) << r.out;
  EXPECT_GE(JsonNumber(r.out, "cpu_seconds"), 0) << r.out;
  EXPECT_GT(JsonNumber(r.out, "rss_peak_bytes"), 1 << 20) << r.out;
  EXPECT_EQ(server.Stop(), 0);  // SIGTERM: clean exit
}

TEST_P(PressEndToEnd, ClosedLoopAgainstEchoServer) {
  EchoServerProcess server(GetParam());
  ASSERT_GT(server.port(), 0) << server.first_line();
  const Output r = RunShell(Press(server.port(), server.pid(), "--concurrency=4"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_GT(JsonNumber(r.out, "achieved_qps"), 10) << r.out;
  EXPECT_EQ(JsonNumber(r.out, "calls_failed"), 0) << r.out;
  // A saturated server burns CPU over the 1 s window (how much depends on the machine's load).
  EXPECT_GT(JsonNumber(r.out, "cpu_seconds"), 0) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Modes, PressEndToEnd, ::testing::Values("heap", "arena", "paged", "reuse"));

// --protocol grpc_channel: arenarpc's Channel speaking gRPC to the echo_server's port (its
// replies are verified against the requests, as for baidu_std).
TEST(PressEndToEnd, GrpcChannelTransportAgainstEchoServer) {
  EchoServerProcess server("heap");
  ASSERT_GT(server.port(), 0) << server.first_line();
  const Output r =
      RunShell(Press(server.port(), server.pid(), "--concurrency=4 --protocol=grpc_channel"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\"protocol\":\"grpc_channel\""), std::string::npos) << r.out;
  EXPECT_GT(JsonNumber(r.out, "achieved_qps"), 10) << r.out;
  EXPECT_EQ(JsonNumber(r.out, "calls_failed"), 0) << r.out;
}

TEST(PressEndToEnd, PressReportsConnectionFailuresByCode) {
  // Nothing listens on port 1: every call fails with a socket error; the report counts them.
  const Output r = RunShell(std::string(PRESS_BIN) +
                       " --server=127.0.0.1:1 --qps=50 --warmup_s=0 --duration_s=0.4"
                       " --payload_scale=2 --ring=2 --live=false");
  EXPECT_EQ(r.exit_code, 1) << r.out;  // no call succeeded
  EXPECT_NE(r.out.find("0 ok, 20 failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("error "), std::string::npos) << r.out;
}

TEST(PressEndToEnd, BadFlagsFailFastWithAMessage) {
  const std::string press = PRESS_BIN, server = ECHO_SERVER_BIN;
  struct Case {
    std::string command, message;
  };
  for (const Case& c : std::initializer_list<Case>{
           {press + " --qps=10 --concurrency=2", "exactly one of --qps"},
           {press + " --server=nohost --qps=10", "host:port"},
           {press + " --qps=-1", "--qps"},
           {press + " --qps=10 --payload_scale=0", "payload_scale"},
           {press + " --qps=10 --connection_type=udp", "connection_type"},
           {press + " --qps=10 --protocol=carrier_pigeon", "unknown --protocol"},
           {server + " --mode=bogus", "--mode"},
           {server + " --address=localhost", "--address"},
           {server + " --threads=-2", "--threads"},
           {server + " --page_size=0", "--page_size"},
       }) {
    const Output r = RunShell(c.command);
    EXPECT_NE(r.exit_code, 0) << c.command;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << c.command << "\n" << r.out;
  }
}

}  // namespace
