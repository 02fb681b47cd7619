// grpc.health.v1.Health's Watch with Python grpcio (grpc_reflection_python_client.py watch):
// the current status first, then each change Server::SetServingStatus makes, then NOT_SERVING
// as soon as Stop() begins and the call's end (UNAVAILABLE) — with Stop() not waiting for the
// watch until its deadline. Watches on one connection count against
// max_streaming_calls_per_connection like any streaming call.
#include "grpc_builtin_fixture.h"

namespace arenarpc::e2e {
namespace {

class GrpcHealthTest : public GrpcBuiltinTest {};

TEST_P(GrpcHealthTest, WatchSeesEachChangeThenNotServingOnStop) {
  ServerOptions options;
  options.stop_deadline = std::chrono::milliseconds(10000);
  StartStampServer(options);
  const std::string service = "arenarpc.e2e.reflected.StampService";
  BackgroundCommand watch(PythonClient(port_, "watch " + service));
  BackgroundCommand overall(PythonClient(port_, "watch ''"));
  ASSERT_TRUE(watch.WaitFor("STATUS SERVING\n")) << watch.output();
  ASSERT_TRUE(overall.WaitFor("STATUS SERVING\n")) << overall.output();

  server_->SetServingStatus(service, false);
  ASSERT_TRUE(watch.WaitFor("STATUS NOT_SERVING\n")) << watch.output();
  server_->SetServingStatus(service, true);
  ASSERT_TRUE(watch.WaitFor("STATUS SERVING\n", 2)) << watch.output();

  const auto stop_started = std::chrono::steady_clock::now();
  EXPECT_EQ(0, server_->Stop());
  const auto stop_took = std::chrono::steady_clock::now() - stop_started;
  EXPECT_LT(stop_took, std::chrono::seconds(5)) << "Stop() waited for the watches";
  for (const BackgroundCommand* each : {&watch, &overall}) {
    ASSERT_TRUE(each->WaitFor("END ")) << each->output();
    const std::string out = each->output();
    const size_t not_serving = out.rfind("STATUS NOT_SERVING\n");
    ASSERT_NE(std::string::npos, not_serving) << out;
    EXPECT_LT(not_serving, out.find("END UNAVAILABLE the server is stopping")) << out;
  }
  EXPECT_EQ("STATUS SERVING\nSTATUS NOT_SERVING\nSTATUS SERVING\nSTATUS NOT_SERVING\n"
            "END UNAVAILABLE the server is stopping\n",
            watch.output());
  // After Stop() began, the status stays NOT_SERVING whatever the application sets.
  server_->SetServingStatus(service, true);
}

TEST_P(GrpcHealthTest, SettingEveryServiceReachesTheOverallWatch) {
  StartStampServer();
  BackgroundCommand overall(PythonClient(port_, "watch ''"));
  ASSERT_TRUE(overall.WaitFor("STATUS SERVING\n")) << overall.output();
  server_->SetServingStatus(false);
  ASSERT_TRUE(overall.WaitFor("STATUS NOT_SERVING\n")) << overall.output();
  server_->Stop();  // already NOT_SERVING: no second message, the call ends
  ASSERT_TRUE(overall.WaitFor("END ")) << overall.output();
  EXPECT_EQ("STATUS SERVING\nSTATUS NOT_SERVING\nEND UNAVAILABLE the server is stopping\n",
            overall.output());
}

TEST_P(GrpcHealthTest, WatchesOfOneConnectionAreBoundedByItsStreamingShare) {
  ServerOptions options;
  options.max_streaming_calls_per_connection = 3;
  StartStampServer(options);
  const press::ShellOutput run = press::RunShell(PythonClient(port_, "watches 5"));
  EXPECT_EQ(0, run.exit_code) << run.out;
  int serving = 0, refused = 0;
  for (int i = 0; i < 5; ++i) {
    const std::string prefix = "WATCH " + std::to_string(i) + " ";
    serving += run.out.find(prefix + "SERVING\n") != std::string::npos;
    refused += run.out.find(prefix + "RESOURCE_EXHAUSTED\n") != std::string::npos;
  }
  EXPECT_EQ(3, serving) << run.out;
  EXPECT_EQ(2, refused) << run.out;
}

INSTANTIATE_TEST_SUITE_P(Heap, GrpcHealthTest, ::testing::Values("heap"), ModeName);

}  // namespace
}  // namespace arenarpc::e2e
