// etcd:// URLs and their timing parameters parsed on their own; then end to end against a real etcd
// (/usr/bin/etcd on loopback ports, temporary data dir): servers register themselves, a cluster
// channel follows additions and removals, a SIGKILLed server process disappears after its lease
// TTL, an etcd restart does not break calls, an etcd endpoint that silently blackholes (behind a
// loopback TCP proxy) is left for the next one, and a list nobody can confirm any more is reported
// as stale (the last two with short timings set in the URL).
#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <vector>

#include "arenarpc/cluster/etcd.h"
#include "arenarpc/logging.h"
#include "cluster/etcd/etcd_client.h"
#include "cluster_test_util.h"
#include "etcd_process.h"

namespace arenarpc::testing {
namespace {

using std::chrono::milliseconds;

// In the order of EtcdTimings' fields.
cluster::etcd::EtcdTimings Timings(int retry_interval, int progress_interval, int watch_deadline,
                                   int stale_after, int call_timeout, int keepalive_interval,
                                   int keepalive_timeout) {
  return {milliseconds(retry_interval),    milliseconds(progress_interval),
          milliseconds(watch_deadline),    milliseconds(stale_after),
          milliseconds(call_timeout),      milliseconds(keepalive_interval),
          milliseconds(keepalive_timeout)};
}

TEST(EtcdUrl, TimingsHaveDefaultsAndComeFromTheQuery) {
  cluster::etcd::EtcdTarget target;
  std::string error;
  ASSERT_TRUE(cluster::etcd::ParseEtcdTarget("h1:2379,h2:2379/services/echo", &target, &error))
      << error;
  EXPECT_EQ(target.prefix, "/services/echo/");
  EXPECT_EQ(target.timings, Timings(500, 1000, 3000, 5000, 2000, 10000, 5000));

  ASSERT_TRUE(cluster::etcd::ParseEtcdTarget(
      "h1:2379,h2:2379/services/echo?watch_deadline_ms=900&progress_interval_ms=300&"
      "stale_after_ms=1200&retry_interval_ms=50&call_timeout_ms=700&keepalive_interval_ms=6000&"
      "keepalive_timeout_ms=1500",
      &target, &error))
      << error;
  EXPECT_EQ(target.endpoints, (std::vector<std::string>{"h1:2379", "h2:2379"}));
  EXPECT_EQ(target.prefix, "/services/echo/") << "the query is not part of the prefix";
  EXPECT_EQ(target.timings, Timings(50, 300, 900, 1200, 700, 6000, 1500));

  // One parameter; the others keep their defaults. The range's ends are valid.
  ASSERT_TRUE(cluster::etcd::ParseEtcdTarget("h:1/p/?call_timeout_ms=3600000&retry_interval_ms=1",
                                             &target, &error))
      << error;
  EXPECT_EQ(target.prefix, "/p/");
  EXPECT_EQ(target.timings, Timings(1, 1000, 3000, 5000, 3600000, 10000, 5000));
  ASSERT_TRUE(cluster::etcd::ParseEtcdTarget("h:1/p?", &target, &error)) << error;
  EXPECT_EQ(target.prefix, "/p/");
  EXPECT_EQ(target.timings, cluster::etcd::EtcdTimings{});
}

TEST(EtcdUrl, BadTimingsAreRefusedNamingTheParameter) {
  const std::pair<const char*, const char*> cases[] = {
      {"?watch_deadline=3000", "unknown parameter 'watch_deadline' (known: retry_interval_ms,"},
      {"?progress_interval_ms", "parameter 'progress_interval_ms' is not name=value"},
      {"?stale_after_ms=abc", "stale_after_ms=abc is not a whole number of milliseconds"},
      {"?stale_after_ms=", "stale_after_ms= is not a whole number of milliseconds"},
      {"?call_timeout_ms=1.5", "call_timeout_ms=1.5 is not a whole number of milliseconds"},
      {"?call_timeout_ms=+5", "call_timeout_ms=+5 is not a whole number of milliseconds"},
      {"?retry_interval_ms=0", "retry_interval_ms=0 is out of range (1..3600000)"},
      {"?retry_interval_ms=-5", "retry_interval_ms=-5 is out of range (1..3600000)"},
      {"?keepalive_interval_ms=3600001", "keepalive_interval_ms=3600001 is out of range"},
      {"?keepalive_timeout_ms=99999999999999999999",
       "keepalive_timeout_ms=99999999999999999999 is out of range"},
      {"?call_timeout_ms=100&call_timeout_ms=200", "parameter call_timeout_ms is given twice"},
      {"?progress_interval_ms=3000",
       "watch_deadline_ms=3000 must be greater than progress_interval_ms=3000"},
      {"?watch_deadline_ms=500&progress_interval_ms=800",
       "watch_deadline_ms=500 must be greater than progress_interval_ms=800"},
      {"?stale_after_ms=1000",
       "stale_after_ms=1000 must be greater than progress_interval_ms=1000"},
  };
  for (const auto& [query, expected] : cases) {
    const std::string target = "127.0.0.1:2379/p" + std::string(query);
    cluster::etcd::EtcdTarget parsed;
    std::string error;
    EXPECT_FALSE(cluster::etcd::ParseEtcdTarget(target, &parsed, &error)) << target;
    EXPECT_EQ(error.rfind("etcd://" + target + ": ", 0), 0u) << error;
    EXPECT_NE(error.find(expected), std::string::npos) << target << " -> " << error;
  }

  // Through the public error paths (refused before any connection: no etcd needed).
  Channel channel;
  ChannelOptions options = ClusterOptions();
  EXPECT_EQ(channel.Init("etcd://127.0.0.1:2379/p?watch_deadline_ms=abc", "rr", &options), -1);
  EXPECT_NE(channel.last_error().find("watch_deadline_ms=abc is not a whole number"),
            std::string::npos)
      << channel.last_error();
  TestServer server;
  ServerOptions server_options;
  server_options.registry_url = "etcd://127.0.0.1:2379/p?call_timeout_ms=0";
  EXPECT_FALSE(server.Start(0, server_options, /*expect_success=*/false));
  EXPECT_NE(server.last_error().find("registry_url: etcd://127.0.0.1:2379/p?call_timeout_ms=0: "
                                     "call_timeout_ms=0 is out of range"),
            std::string::npos)
      << server.last_error();
}

// A loopback TCP proxy to one port that can start blackholing: from then on it forwards nothing in
// either direction and never closes, like a host that vanished without a reset.
class BlackholeProxy {
 public:
  explicit BlackholeProxy(int upstream_port) : upstream_port_(upstream_port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    ::listen(listen_fd_, 64);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }
  ~BlackholeProxy() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    accept_thread_.join();
    std::lock_guard lock(mutex_);
    for (std::thread& t : pumps_) t.join();
    ::close(listen_fd_);
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  void Blackhole() { blackhole_ = true; }

 private:
  void AcceptLoop() {
    for (;;) {
      const int client = ::accept(listen_fd_, nullptr, nullptr);
      if (client < 0) return;
      std::lock_guard lock(mutex_);
      pumps_.emplace_back([this, client] { Pump(client); });
    }
  }
  void Pump(int client) {
    const int upstream = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(upstream_port_));
    bool open = ::connect(upstream, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    char buffer[16 * 1024];
    while (!stopping_) {
      if (blackhole_ || !open) {  // read nothing, write nothing, close nothing
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      pollfd fds[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
      if (::poll(fds, 2, 20) <= 0) continue;
      for (int i = 0; i < 2 && open; ++i) {
        if (fds[i].revents == 0) continue;
        const ssize_t n = ::recv(fds[i].fd, buffer, sizeof buffer, 0);
        if (n <= 0 || blackhole_) {
          open = n > 0;
          break;
        }
        if (::send(fds[1 - i].fd, buffer, static_cast<size_t>(n), MSG_NOSIGNAL) != n) open = false;
      }
    }
    ::close(client);
    ::close(upstream);
  }

  const int upstream_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false}, blackhole_{false};
  std::mutex mutex_;
  std::vector<std::thread> pumps_;
  std::thread accept_thread_;
};

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
  // query: "" or "?name=value&..." (the URL's timing parameters).
  std::string Url(const std::string& query = "") const {
    return "etcd://" + etcd_->endpoint() + prefix_ + query;
  }

  // A server registered under this test's prefix.
  std::unique_ptr<TestServer> Registered(int ttl_s = 10, const std::string& query = "") {
    auto server = std::make_unique<TestServer>();
    ServerOptions options;
    options.num_threads = 2;
    options.registry_url = Url(query);
    options.registry_lease_ttl = std::chrono::milliseconds(ttl_s * 1000);
    EXPECT_TRUE(server->Start(0, options));
    return server;
  }
  static bool HasServers(Channel& channel, size_t n) { return channel.servers().size() == n; }
  // Puts "<prefix>/<address>" straight into etcd.
  void PutServer(const std::string& address) {
    cluster::etcd::EtcdClient client({etcd_->endpoint()});
    etcdserverpb::PutRequest put;
    put.set_key(prefix_ + "/" + address);
    etcdserverpb::PutResponse response;
    ASSERT_TRUE(client.kv()
                    .Put(cluster::etcd::ContextWithTimeout(std::chrono::milliseconds(2000)).get(),
                         put, &response)
                    .ok());
  }
  // Every "key=value" under this test's prefix, read straight from etcd.
  std::vector<std::string> KeysAndValues() {
    cluster::etcd::EtcdClient client({etcd_->endpoint()});
    etcdserverpb::RangeRequest range;
    range.set_key(prefix_ + "/");
    range.set_range_end(cluster::etcd::PrefixRangeEnd(prefix_ + "/"));
    etcdserverpb::RangeResponse response;
    EXPECT_TRUE(client.kv()
                    .Range(cluster::etcd::ContextWithTimeout(std::chrono::milliseconds(2000)).get(),
                           range, &response)
                    .ok());
    std::vector<std::string> all;
    for (const mvccpb::KeyValue& kv : response.kvs()) all.push_back(kv.key() + "=" + kv.value());
    return all;
  }
  int EtcdPort() const {
    const std::string endpoint = etcd_->endpoint();
    return std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
  }

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
  server_options.registry_lease_ttl = std::chrono::milliseconds(999);
  EXPECT_FALSE(server.Start(0, server_options, /*expect_success=*/false));
  EXPECT_NE(server.last_error().find("registry_lease_ttl=999 ms"), std::string::npos)
      << server.last_error();
}

// The channel's and the servers' URLs carry timing parameters: the keys are those of the prefix.
TEST_F(EtcdCluster, ClientFollowsServersThatRegisterAndStop) {
  Channel channel;
  ChannelOptions options = ClusterOptions();
  ASSERT_EQ(channel.Init(Url("?progress_interval_ms=500&watch_deadline_ms=1500").c_str(), "rr",
                         &options),
            0)
      << channel.last_error();
  EXPECT_EQ(CallEcho(channel, "none").error_code, EHOSTDOWN);

  auto a = Registered(10, "?call_timeout_ms=1500&keepalive_interval_ms=6000");
  auto b = Registered();
  ASSERT_TRUE(WaitFor([&] { return HasServers(channel, 2); }, std::chrono::seconds(2)));
  std::vector<std::string> expected_keys = {
      prefix_ + "/" + a->address() + "=" + a->address() + " 1",
      prefix_ + "/" + b->address() + "=" + b->address() + " 1"};
  std::ranges::sort(expected_keys);
  EXPECT_EQ(KeysAndValues(), expected_keys);
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
                           "--registry_url=" + Url(), "--registry_lease_ttl_ms=2000"},
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

// The watch on a blackholed endpoint hears no progress notification for watch_deadline_ms (asked
// every progress_interval_ms) and is cancelled; after retry_interval_ms the channel re-reads the
// prefix on the next endpoint (Range, up to call_timeout_ms), so a change made meanwhile shows
// within 1 + 0.25 + 0.1 + 0.5 s (the defaults would allow 3 + 1 + 0.5 + 2 s).
TEST_F(EtcdCluster, ABlackholedEndpointIsLeftForTheNextOne) {
  BlackholeProxy proxy(EtcdPort());
  PutServer("127.0.0.1:1001");
  Channel channel;
  ChannelOptions options = ClusterOptions();
  const std::string url = "etcd://" + proxy.endpoint() + "," + etcd_->endpoint() + prefix_ +
                          "?watch_deadline_ms=1000&progress_interval_ms=250&retry_interval_ms=100&"
                          "call_timeout_ms=500";
  ASSERT_EQ(channel.Init(url.c_str(), "rr", &options), 0) << channel.last_error();
  ASSERT_TRUE(HasServers(channel, 1));
  proxy.Blackhole();
  const auto start = std::chrono::steady_clock::now();
  PutServer("127.0.0.1:1002");
  ASSERT_TRUE(WaitFor([&] { return HasServers(channel, 2); }, std::chrono::seconds(12)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1000 + 250 + 100 + 500 + 1000));
}

// With one endpoint, blackholed: the list is kept and a warning says it is stale once it has not
// been confirmed for stale_after_ms (checked every progress_interval_ms; the defaults are 5 s and
// 1 s).
TEST_F(EtcdCluster, AListNobodyConfirmsIsReportedStale) {
  BlackholeProxy proxy(EtcdPort());
  PutServer("127.0.0.1:1001");
  std::mutex mutex;
  std::vector<std::string> warnings;
  SetLogSink([&](LogLevel, std::string_view message) {
    std::lock_guard lock(mutex);
    warnings.emplace_back(message);
  });
  const auto stale_warnings = [&] {
    std::lock_guard lock(mutex);
    return std::count_if(warnings.begin(), warnings.end(), [](const std::string& w) {
      return w.find("server list is stale") != std::string::npos;
    });
  };
  {
    Channel channel;
    ChannelOptions options = ClusterOptions();
    const std::string url = "etcd://" + proxy.endpoint() + prefix_ +
                            "?stale_after_ms=1500&progress_interval_ms=250&watch_deadline_ms=1000&"
                            "call_timeout_ms=500";
    ASSERT_EQ(channel.Init(url.c_str(), "rr", &options), 0) << channel.last_error();
    // Longer than stale_after_ms: only the progress notifications keep an unchanged list confirmed.
    std::this_thread::sleep_for(milliseconds(2000));
    EXPECT_EQ(stale_warnings(), 0);
    proxy.Blackhole();
    const auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(WaitFor([&] { return stale_warnings() > 0; }, std::chrono::seconds(12)));
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_LT(took, milliseconds(1500 + 250 + 1000));
    EXPECT_TRUE(HasServers(channel, 1)) << "the last good list is kept";
  }
  SetLogSink(nullptr);
}

}  // namespace
}  // namespace arenarpc::testing
