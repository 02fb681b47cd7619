// etcd:// end to end against a real etcd (/usr/bin/etcd on loopback ports, temporary data dir):
// servers register themselves, a cluster channel follows additions and removals, a SIGKILLed
// server process disappears after its lease TTL, an etcd restart does not break calls.
#include <fcntl.h>

#include <map>

#include "arenarpc/cluster/etcd.h"
#include "cluster/etcd/etcd_client.h"
#include "cluster_test_util.h"
#include "etcd_process.h"

namespace arenarpc::testing {
namespace {

class EtcdCluster : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!EtcdProcess::Available()) return;
    etcd_ = new EtcdProcess();
    if (!etcd_->Start() || !WaitUntilWritable()) {
      delete etcd_;
      etcd_ = nullptr;
    }
  }
  // A write needs an elected leader: wait for one before the tests time anything.
  static bool WaitUntilWritable() {
    cluster::etcd::EtcdClient client({etcd_->endpoint()});
    return WaitFor(
        [&] {
          etcdserverpb::PutRequest put;
          put.set_key("/arenarpc-test-ready");
          etcdserverpb::PutResponse response;
          return client.kv()
              .Put(cluster::etcd::ContextWithTimeout(std::chrono::milliseconds(500)).get(), put,
                   &response)
              .ok();
        },
        std::chrono::seconds(15));
  }
  static void TearDownTestSuite() {
    delete etcd_;
    etcd_ = nullptr;
  }
  void SetUp() override {
    if (!EtcdProcess::Available()) GTEST_SKIP() << "/usr/bin/etcd is not installed";
    ASSERT_NE(etcd_, nullptr) << "etcd did not start";
    prefix_ = "/arenarpc-test/" +
              std::string(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  std::string Url() const { return "etcd://" + etcd_->endpoint() + prefix_; }

  // A server registered under this test's prefix.
  std::unique_ptr<TestServer> Registered(int ttl_s = 10) {
    auto server = std::make_unique<TestServer>();
    ServerOptions options;
    options.num_threads = 2;
    options.registry_url = Url();
    options.registry_lease_ttl_s = ttl_s;
    EXPECT_TRUE(server->Start(0, options));
    return server;
  }
  static bool HasServers(Channel& channel, size_t n) { return channel.servers().size() == n; }

  static EtcdProcess* etcd_;
  std::string prefix_;
};
EtcdProcess* EtcdCluster::etcd_ = nullptr;

TEST_F(EtcdCluster, BadUrlsAndUnreachableEtcdFailWithAMessage) {
  Channel channel;
  ChannelOptions options = ClusterOptions();
  EXPECT_EQ(channel.Init(("etcd://" + etcd_->endpoint()).c_str(), "rr", &options), -1);
  EXPECT_NE(channel.last_error().find("no key prefix"), std::string::npos) << channel.last_error();
  EXPECT_EQ(channel.Init("etcd://127.0.0.1/x", "rr", &options), -1);
  EXPECT_NE(channel.last_error().find("not host:port"), std::string::npos) << channel.last_error();
  const std::string dead = "etcd://127.0.0.1:" + std::to_string(FreePort()) + "/x";
  EXPECT_EQ(channel.Init(dead.c_str(), "rr", &options), -1);
  EXPECT_NE(channel.last_error().find("Range"), std::string::npos) << channel.last_error();

  TestServer server;
  ServerOptions server_options;
  server_options.registry_url = dead;
  EXPECT_FALSE(server.Start(0, server_options, /*expect_success=*/false));
  EXPECT_NE(server.last_error().find("registry_url"), std::string::npos) << server.last_error();
  server_options.registry_lease_ttl_s = 0;
  EXPECT_FALSE(server.Start(0, server_options, /*expect_success=*/false));
  EXPECT_NE(server.last_error().find("registry_lease_ttl_s"), std::string::npos);
}

TEST_F(EtcdCluster, ClientFollowsServersThatRegisterAndStop) {
  Channel channel;
  ChannelOptions options = ClusterOptions();
  ASSERT_EQ(channel.Init(Url().c_str(), "rr", &options), 0) << channel.last_error();
  EXPECT_EQ(CallEcho(channel, "none").error_code, EHOSTDOWN);

  auto a = Registered();
  auto b = Registered();
  ASSERT_TRUE(WaitFor([&] { return HasServers(channel, 2); }, std::chrono::seconds(2)));
  std::map<std::string, int> counts;
  for (int i = 0; i < 10; ++i) {
    CallOutcome outcome = CallEcho(channel, "x");
    ASSERT_EQ(outcome.error_code, 0) << outcome.error_text;
    ++counts[outcome.server];
  }
  EXPECT_EQ(counts[a->address()], 5);
  EXPECT_EQ(counts[b->address()], 5);

  auto c = Registered();
  ASSERT_TRUE(WaitFor([&] { return HasServers(channel, 3); }, std::chrono::seconds(2)));
  a->Stop();  // deletes its key first
  ASSERT_TRUE(WaitFor([&] { return HasServers(channel, 2); }, std::chrono::seconds(2)));
  for (const ServerInfo& info : channel.servers()) EXPECT_NE(info.address, a->address());
  for (int i = 0; i < 10; ++i) {
    CallOutcome outcome = CallEcho(channel, "y");
    ASSERT_EQ(outcome.error_code, 0) << outcome.error_text;
    EXPECT_NE(outcome.server, a->address());
  }
}

TEST_F(EtcdCluster, AKilledServerProcessDisappearsAfterItsLeaseTtl) {
  auto local = Registered();
  Channel channel;
  ChannelOptions options = ClusterOptions();
  ASSERT_EQ(channel.Init(Url().c_str(), "rr", &options), 0) << channel.last_error();
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  ChildProcess child;
  ASSERT_TRUE(child.Spawn({ECHO_SERVER_PATH, "--address=127.0.0.1:0", "--threads=1",
                           "--registry_url=" + Url(), "--registry_lease_ttl_s=2"},
                          etcd_->dir() + "/echo_server.log", out[1]));
  ::close(out[1]);
  // "echo_server listening on 127.0.0.1:<port> ..."
  std::string line;
  char ch;
  while (line.find('\n') == std::string::npos && ::read(out[0], &ch, 1) == 1) line += ch;
  ::close(out[0]);
  ASSERT_NE(line.find("listening on"), std::string::npos) << line;
  ASSERT_TRUE(WaitFor([&] { return HasServers(channel, 2); }, std::chrono::seconds(2)));

  child.Kill(SIGKILL);  // no Stop(): the key stays until its lease expires
  const auto killed = std::chrono::steady_clock::now();
  // Calls keep working meanwhile: the dead one is out of rotation after its first refused connect.
  for (int i = 0; i < 10; ++i) {
    CallOutcome outcome = CallEcho(channel, "k");
    ASSERT_EQ(outcome.error_code, 0) << outcome.error_text;
    EXPECT_EQ(outcome.server, local->address());
  }
  ASSERT_TRUE(WaitFor([&] { return HasServers(channel, 1); }, std::chrono::seconds(6)));
  const auto gone_after = std::chrono::steady_clock::now() - killed;
  EXPECT_GE(gone_after, std::chrono::milliseconds(1000)) << "removed before its lease could expire";
  EXPECT_EQ(channel.servers()[0].address, local->address());
}

TEST_F(EtcdCluster, EtcdRestartDoesNotBreakCallsToKnownServers) {
  auto a = Registered();
  auto b = Registered();
  Channel channel;
  ChannelOptions options = ClusterOptions();
  ASSERT_EQ(channel.Init(Url().c_str(), "rr", &options), 0) << channel.last_error();
  ASSERT_TRUE(HasServers(channel, 2));
  etcd_->Kill();
  for (int i = 0; i < 20; ++i) {
    CallOutcome outcome = CallEcho(channel, "r");
    ASSERT_EQ(outcome.error_code, 0) << outcome.error_text;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // the watch notices, retries
  EXPECT_TRUE(HasServers(channel, 2)) << "the last good list is kept";
  ASSERT_TRUE(etcd_->Start());
  ASSERT_TRUE(WaitUntilWritable());
  // The watch is re-established: a new server is seen, the old ones are still listed.
  auto c = Registered();
  ASSERT_TRUE(WaitFor([&] { return HasServers(channel, 3); }, std::chrono::seconds(5)));
  for (int i = 0; i < 9; ++i) {
    CallOutcome outcome = CallEcho(channel, "after");
    ASSERT_EQ(outcome.error_code, 0) << outcome.error_text;
  }
}

}  // namespace
}  // namespace arenarpc::testing
