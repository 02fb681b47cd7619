// A method's memory strategy switched through /flags while arenarpc_press replays captured traffic
// against an echo_server child: no call lost, and every reply has the bytes the server gave the
// same request under heap before the switches (--replay_check).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <optional>
#include <string>
#include <thread>

#include "echo_server_child.h"
#include "http_get.h"
#include "run_shell.h"

namespace arenarpc::builtin {
namespace {

// method_memory_mode[arenarpc.example.EchoService.Echo], as a URL path segment.
constexpr char kEchoModeSetting[] =
    "/flags/method_memory_mode%5Barenarpc.example.EchoService.Echo%5D?setvalue=";

TEST(LiveSettingsUnderPress, StrategySwitchesLoseNoCallAndKeepHeapsBytes) {
  const std::filesystem::path dump = std::filesystem::temp_directory_path() /
                                     ("arenarpc_live_press_" + std::to_string(getpid()));
  std::filesystem::remove_all(dump);
  EchoServer server({"ARENARPC_CAPTURE=" + dump.string() + ",samples_per_second=1000"},
                    "live_settings_press", {"--threads=2"});
  ASSERT_GT(server.port(), 0) << server.log();
  const std::string address = "127.0.0.1:" + std::to_string(server.port());

  // Traffic to replay: the echo workload's 16 request shapes, captured by the server itself;
  // then capture is paused (its live setting) so that the replay is not captured again.
  const press::ShellOutput traffic = press::RunShell(
      std::string(PRESS_BIN) + " --server=" + address +
      " --payload_scale=1 --ring=16 --qps=200 --warmup_s=0 --duration_s=0.5 --live=false");
  ASSERT_EQ(0, traffic.exit_code) << traffic.out;
  int status = 0;
  HttpGet(server.port(), "/flags/capture.samples_per_second?setvalue=0", &status);
  ASSERT_EQ(200, status);
  for (int i = 0; i < 100; ++i) {  // the writer thread has written what it took
    const std::optional<std::string> vars = HttpGet(server.port(), "/vars/rpc_server_capture_");
    const std::string text = vars.value_or("");
    const auto value = [&](const std::string& name) {
      const size_t at = text.find(name + " : ");
      return at == std::string::npos ? -1 : std::stoll(text.substr(at + name.size() + 3));
    };
    if (value("rpc_server_capture_written") > 0 &&
        value("rpc_server_capture_written") == value("rpc_server_capture_sampled")) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }

  // The replay's first pass keeps heap's reply to every record; during its 4 s of load the
  // method's strategy goes round every strategy, and each reply is compared with heap's.
  auto replay = std::async(std::launch::async, [&] {
    return press::RunShell(std::string(PRESS_BIN) + " --server=" + address + " --replay=" +
                           dump.string() + " --replay_check --concurrency=4 --warmup_s=0 "
                           "--duration_s=4 --live=false --json --server_vars=false");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // past the first pass
  int switches = 0;
  const char* const modes[] = {"reuse", "arena", "auto", "paged", "heap"};
  for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
       std::chrono::steady_clock::now() < until; ++switches) {
    int set_status = 0;
    const std::optional<std::string> answer = HttpGet(
        server.port(), std::string(kEchoModeSetting) + modes[switches % 5], &set_status);
    ASSERT_EQ(200, set_status) << answer.value_or("(no reply)");
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
  }
  const press::ShellOutput run = replay.get();
  ASSERT_EQ(0, run.exit_code) << run.out;
  EXPECT_GE(switches, 20);
  EXPECT_NE(std::string::npos, run.out.find("[replay] differences total: 0")) << run.out;
  EXPECT_EQ(0, press::JsonNumber(run.out, "calls_failed")) << run.out;
  EXPECT_GT(press::JsonNumber(run.out, "calls_ok"), 100) << run.out;
  std::filesystem::remove_all(dump);
}

}  // namespace
}  // namespace arenarpc::builtin
