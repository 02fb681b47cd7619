// No tax for having tried, in resident memory: an echo_server child in the default "auto" mode,
// pressed until its first and confirmation trials are over and then served by the mode it chose,
// holds at most kRssBound times the RSS of an echo_server in that fixed mode pressed for as long
// (issue 40's target), and serving grew it by at most kLeftByTrialsMiB more. The losers' pools and
// pages are given back at the settle and malloc is asked to return them (docs/memory.md,
// "Memory"); kept, serving grew the RSS 1.8-2.2x as much as in the fixed mode (tcmalloc, reuse
// chosen: +6 MiB more), given back 1.3-1.5x.
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "http_get.h"
#include "run_shell.h"

namespace arenarpc::e2e {
namespace {

using namespace std::chrono_literals;
using google::protobuf::Struct;
using google::protobuf::Value;

constexpr const char* kTcmalloc = "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4";
constexpr const char* kEcho = "arenarpc.example.EchoService.Echo";
// Settled auto over the fixed mode it chose, in RSS.
constexpr double kRssBound = 1.2;
// What serving added to auto's RSS beyond what it added to the fixed mode's: the release leaves
// some of malloc's free lists and of the losers' objects between live blocks. Measured 1.2-1.7 MiB
// (glibc) and 2.5-3.7 MiB (tcmalloc). Not a ratio: the chosen mode's own growth moves with the
// choice (tcmalloc: reuse +5.2 MiB, paged +4.4, for the same ~8 MiB of auto).
constexpr double kLeftByTrialsMiB = 4;
constexpr int kRoundSeconds = 2;
constexpr int kMaxSettleRounds = 60;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// An echo_server child with one I/O thread on a free port, `environment` ("NAME=value") set.
class EchoServerChild {
 public:
  EchoServerChild(const std::vector<std::string>& environment, const std::string& mode)
      : log_{::testing::TempDir() + "auto_rss_" + std::to_string(getpid()) + "_" + mode + ".log"},
        process_(Argv(environment, mode), log_.path) {
    static const std::regex kListening(R"(listening on 127\.0\.0\.1:(\d+) .*pid=(\d+))");
    for (const auto until = std::chrono::steady_clock::now() + 20s;
         port_ == 0 && std::chrono::steady_clock::now() < until && process_.running();
         std::this_thread::sleep_for(20ms)) {
      const std::string log = ReadFile(log_.path);
      std::smatch m;
      if (std::regex_search(log, m, kListening)) {
        port_ = std::stoi(m[1]);
        pid_ = std::stoi(m[2]);
      }
    }
  }
  int port() const { return port_; }
  std::string log() const { return ReadFile(log_.path); }

  // One round of load: a closed loop of 8 calls in flight on the seed workload; every reply is
  // checked against its request by the press. The timeout is far above a call's latency: the
  // test measures memory, and a loaded machine stalled the one-thread server past the press's
  // default 1 s (7 of 486 calls in one run).
  void Press() const {
    const press::ShellOutput out = press::RunShell(
        std::string(PRESS_BIN) + " --server=127.0.0.1:" + std::to_string(port_) +
        " --concurrency=8 --payload_scale=10 --ring=16 --warmup_s=0 --timeout_ms=10000" +
        " --duration_s=" +
        std::to_string(kRoundSeconds) + " --json --live=false");
    ASSERT_EQ(0, out.exit_code) << out.out;
    EXPECT_EQ(0, press::JsonNumber(out.out, "calls_failed")) << out.out;
  }

  uint64_t RssBytes() const {
    const std::string status = ReadFile("/proc/" + std::to_string(pid_) + "/status");
    std::smatch m;
    static const std::regex kRss(R"(VmRSS:\s+(\d+) kB)");
    return std::regex_search(status, m, kRss) ? std::stoull(m[1]) << 10 : 0;
  }

  // The echo method's "auto" state from /memory?format=json (an empty Struct if unreadable).
  Struct AutoState() const {
    int status = 0;
    const std::string body =
        builtin::HttpGet(port_, "/memory?format=json", &status).value_or("");
    Struct page;
    if (status != 200 || !google::protobuf::util::JsonStringToMessage(body, &page).ok()) {
      return {};
    }
    const auto& methods = page.fields().at("methods").struct_value().fields();
    const auto method = methods.find(kEcho);
    if (method == methods.end()) return {};
    const auto& fields = method->second.struct_value().fields();
    const auto choice = fields.find("auto");
    return choice == fields.end() ? Struct{} : choice->second.struct_value();
  }

 private:
  static std::vector<std::string> Argv(std::vector<std::string> argv, const std::string& mode) {
    argv.insert(argv.begin(), "/usr/bin/env");
    argv.insert(argv.end(), {ECHO_SERVER_BIN, "--address=127.0.0.1:0", "--threads=1",
                             "--mode=" + mode});
    return argv;
  }

  // The child's output file, removed once the child is gone (failures print it first).
  struct LogFile {
    std::string path;
    ~LogFile() { std::remove(path.c_str()); }
  };
  LogFile log_;  // before process_: outlives the child
  builtin::ChildProcess process_;
  int port_ = 0;
  int pid_ = 0;
};

bool Settled(const Struct& choice) {
  const auto& f = choice.fields();
  return f.contains("trials") && f.at("trials").number_value() >= 2 &&
         !f.at("in_trial").bool_value();
}

void ExpectSettledAutoNearItsChoice(const std::vector<std::string>& environment) {
  std::string chosen;
  int rounds = 0;
  uint64_t auto_rss = 0, auto_idle = 0;
  {
    EchoServerChild server(environment, "auto");
    ASSERT_GT(server.port(), 0) << server.log();
    auto_idle = server.RssBytes();
    for (; rounds < kMaxSettleRounds && !Settled(server.AutoState()); ++rounds) {
      ASSERT_NO_FATAL_FAILURE(server.Press());
    }
    const Struct choice = server.AutoState();
    ASSERT_TRUE(Settled(choice)) << "not settled after " << rounds << " rounds";
    chosen = choice.fields().at("chosen").string_value();
    // A round served by the choice alone: what it holds serving, besides what the trials left.
    ASSERT_NO_FATAL_FAILURE(server.Press());
    ++rounds;
    ASSERT_EQ(chosen, server.AutoState().fields().at("chosen").string_value())
        << "switched after the confirmation; the comparison would not be with what it served";
    auto_rss = server.RssBytes();
  }
  EchoServerChild fixed(environment, chosen);
  ASSERT_GT(fixed.port(), 0) << fixed.log();
  const uint64_t fixed_idle = fixed.RssBytes();
  for (int i = 0; i < rounds; ++i) ASSERT_NO_FATAL_FAILURE(fixed.Press());
  const uint64_t fixed_rss = fixed.RssBytes();
  ASSERT_GT(fixed_rss, fixed_idle);
  // What serving added to the started process's RSS (its code, libraries and the I/O buffers'
  // first pages are there before any call, the same in every mode).
  const auto grew = [](uint64_t rss, uint64_t idle) {
    return static_cast<double>(rss - std::min(rss, idle)) / (1 << 20);
  };
  const double auto_grew = grew(auto_rss, auto_idle), fixed_grew = grew(fixed_rss, fixed_idle);
  std::printf("auto (chose %s, %d rounds of %d s): RSS %.1f MiB (+%.1f since started); %s "
              "alone: %.1f MiB (+%.1f); growth %.2fx\n",
              chosen.c_str(), rounds, kRoundSeconds, static_cast<double>(auto_rss) / (1 << 20),
              auto_grew, chosen.c_str(), static_cast<double>(fixed_rss) / (1 << 20), fixed_grew,
              auto_grew / fixed_grew);
  EXPECT_LE(static_cast<double>(auto_rss), kRssBound * static_cast<double>(fixed_rss))
      << "auto holds " << auto_rss << " bytes, " << chosen << " alone " << fixed_rss;
  EXPECT_LE(auto_grew - fixed_grew, kLeftByTrialsMiB)
      << "auto holds " << auto_rss << " bytes, " << chosen << " alone " << fixed_rss;
}

TEST(AutoSettledRssTest, GlibcMallocHoldsAboutWhatTheChosenModeHoldsAlone) {
  ExpectSettledAutoNearItsChoice({});
}

TEST(AutoSettledRssTest, TcmallocHoldsAboutWhatTheChosenModeHoldsAlone) {
  ExpectSettledAutoNearItsChoice({std::string("LD_PRELOAD=") + kTcmalloc});
}

}  // namespace
}  // namespace arenarpc::e2e
