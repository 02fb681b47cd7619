// /hotspots/cpu, /hotspots/heap and /hotspots/growth on a real echo_server child process, with
// gperftools' profilers preloaded (as an operator would start it) or absent.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <future>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "echo_server_child.h"
#include "http_get.h"
#include "run_shell.h"

namespace arenarpc::builtin {
namespace {

using namespace std::chrono_literals;

constexpr const char* kProfiler = "/usr/lib/x86_64-linux-gnu/libprofiler.so.0";
constexpr const char* kTcmalloc = "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4";

std::string Press(int port, const std::string& load) {
  return std::string(PRESS_BIN) + " --server=127.0.0.1:" + std::to_string(port) +
         " --payload_scale=2 --ring=16 --warmup_s=0 --json --live=false " + load;
}

TEST(HotspotsTest, CpuProfileOfABusyServerNamesItsHandlerWhileTheServerGoesOnServing) {
  EchoServer server({std::string("LD_PRELOAD=") + kProfiler}, "hotspots");
  ASSERT_GT(server.port(), 0) << server.log();
  // A closed loop for 6 s; the profile covers 3 s of it.
  auto press = std::async(std::launch::async, [&] {
    return press::RunShell(Press(server.port(), "--concurrency=2 --duration_s=6"));
  });
  std::this_thread::sleep_for(1s);
  auto profile = std::async(std::launch::async, [&] {
    int status = 0;
    std::optional<std::string> body = HttpGet(server.port(), "/hotspots/cpu?seconds=3", &status, 60s);
    return std::make_pair(status, body.value_or("(no reply)"));
  });
  std::this_thread::sleep_for(500ms);
  // One profile at a time: a second request while the first runs is refused, and says when to
  // come back.
  int busy_status = 0;
  const std::optional<std::string> busy = HttpGet(server.port(), "/hotspots/cpu?seconds=1", &busy_status);
  EXPECT_EQ(503, busy_status) << busy.value_or("(no reply)");
  EXPECT_NE(std::string::npos, busy.value_or("").find("another profile is being taken"));

  const auto [status, body] = profile.get();
  EXPECT_EQ(200, status) << body;
  EXPECT_NE(std::string::npos, body.find("Total: ")) << body;
  // google-pprof's cumulative column names the handler that ran during the profile.
  EXPECT_NE(std::string::npos, body.find("arenarpc::example::EchoServiceImpl::Echo")) << body;

  const press::ShellOutput load = press.get();
  ASSERT_EQ(0, load.exit_code) << load.out;
  EXPECT_EQ(0, press::JsonNumber(load.out, "calls_failed")) << load.out;
  // The page waited on a fiber: the server's one thread went on serving during the 3 s (calls
  // held behind a blocked thread would have waited 3 s).
  EXPECT_LT(press::JsonNumber(load.out, "max"), 1.5e6) << load.out;

  // The raw profile: gperftools' binary CPU profile (its header is five machine words, the
  // first 0, the second 3).
  int raw_status = 0;
  const std::optional<std::string> raw =
      HttpGet(server.port(), "/hotspots/cpu?seconds=1&format=raw", &raw_status, 60s);
  ASSERT_EQ(200, raw_status) << raw.value_or("(no reply)");
  ASSERT_GE(raw->size(), 5 * sizeof(uint64_t));
  uint64_t header[2];
  std::memcpy(header, raw->data(), sizeof header);
  EXPECT_EQ(0u, header[0]);
  EXPECT_EQ(3u, header[1]);
}

TEST(HotspotsTest, HeapAndGrowthProfilesUnderTcmalloc) {
  EchoServer server({std::string("LD_PRELOAD=") + kTcmalloc, "TCMALLOC_SAMPLE_PARAMETER=65536"},
                    "hotspots");
  ASSERT_GT(server.port(), 0) << server.log();
  const press::ShellOutput load = press::RunShell(Press(server.port(), "--concurrency=2 --duration_s=1"));
  ASSERT_EQ(0, load.exit_code) << load.out;

  int status = 0;
  std::optional<std::string> raw = HttpGet(server.port(), "/hotspots/heap?format=raw", &status);
  EXPECT_EQ(200, status) << raw.value_or("(no reply)");
  EXPECT_TRUE(raw.value_or("").starts_with("heap profile: ")) << raw.value_or("(no reply)");

  // google-pprof read the profile (its sampling rate). Not "Total: ": in 2 of 6 runs tcmalloc
  // had sampled no allocation at all ("heap profile: 0: 0 [0: 0]"), and pprof then prints none.
  std::optional<std::string> text = HttpGet(server.port(), "/hotspots/heap", &status, 60s);
  EXPECT_EQ(200, status) << text.value_or("(no reply)");
  EXPECT_NE(std::string::npos,
            text.value_or("").find("Adjusting heap profiles for 1-in-65536 sampling rate"))
      << text.value_or("(no reply)");

  std::optional<std::string> growth = HttpGet(server.port(), "/hotspots/growth?format=raw", &status);
  EXPECT_EQ(200, status) << growth.value_or("(no reply)");
  EXPECT_TRUE(growth.value_or("").starts_with("heap profile: ")) << growth.value_or("(no reply)");
}

TEST(HotspotsTest, WithoutTheProfilersEachPageSaysHowToEnableIt) {
  EchoServer server({}, "hotspots");
  ASSERT_GT(server.port(), 0) << server.log();
  int status = 0;
  std::optional<std::string> cpu = HttpGet(server.port(), "/hotspots/cpu?seconds=1", &status);
  EXPECT_EQ(501, status);
  EXPECT_NE(std::string::npos, cpu.value_or("").find("LD_PRELOAD=libprofiler.so.0"))
      << cpu.value_or("(no reply)");
  std::optional<std::string> heap = HttpGet(server.port(), "/hotspots/heap", &status);
  EXPECT_EQ(501, status);
  EXPECT_NE(std::string::npos, heap.value_or("").find("TCMALLOC_SAMPLE_PARAMETER"))
      << heap.value_or("(no reply)");
}

TEST(HotspotsTest, SecondsOutOfRangeAreRefusedBeforeProfiling) {
  EchoServer server({std::string("LD_PRELOAD=") + kProfiler}, "hotspots");
  ASSERT_GT(server.port(), 0) << server.log();
  for (const char* bad : {"0", "121", "-1", "3s", ""}) {
    int status = 0;
    std::optional<std::string> body =
        HttpGet(server.port(), std::string("/hotspots/cpu?seconds=") + bad, &status);
    EXPECT_EQ(400, status) << bad << ": " << body.value_or("(no reply)");
    EXPECT_NE(std::string::npos, body.value_or("").find("is invalid: 1..120")) << bad;
  }
}

}  // namespace
}  // namespace arenarpc::builtin
