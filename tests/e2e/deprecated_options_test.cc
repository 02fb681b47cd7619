// The deprecated spellings of renamed duration options (arenarpc/deprecated_option.h) for their
// one release: unset they change nothing; set, they win over the duration that replaced them and
// are validated as it is (Server::Start, Channel::Init, PartitionChannel::Init, the "auto"
// strategy).

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "arenarpc/channel.h"
#include "arenarpc/memory/message_memory.h"
#include "arenarpc/partition_channel.h"
#include "arenarpc/server.h"
#include "test_service.h"

// This file is the deprecated fields' test: it names them on purpose.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace arenarpc::e2e {
namespace {

using std::chrono::milliseconds;

// The value /flags (Server::ListSettings) shows for a setting fixed at Start().
std::string Setting(const Server& server, const std::string& name) {
  for (const ServerSetting& setting : server.ListSettings()) {
    if (setting.name == name) return setting.value;
  }
  return "(missing)";
}

struct StartedServer {
  TestServiceImpl service;
  Server server;
  int Start(const ServerOptions& options) {
    if (server.AddService(&service, SERVER_DOESNT_OWN_SERVICE) != 0) return -1;
    return server.Start("127.0.0.1:0", options);
  }
};

TEST(DeprecatedServerOptions, UnsetTheyLeaveTheDurationsAlone) {
  ServerOptions options;
  options.num_threads = 1;
  options.read_timeout = milliseconds(777);
  options.stop_deadline = std::chrono::seconds(2);
  EXPECT_EQ(kUnsetOption<int>, options.read_timeout_ms);
  StartedServer started;
  ASSERT_EQ(0, started.Start(options)) << started.server.last_error();
  EXPECT_EQ("777", Setting(started.server, "read_timeout_ms"));
  EXPECT_EQ("2000", Setting(started.server, "stop_deadline_ms"));
  EXPECT_EQ("300000", Setting(started.server, "memory.automatic.recheck_interval_ms"));
}

TEST(DeprecatedServerOptions, SetTheyWinOverTheDurations) {
  ServerOptions options;
  options.num_threads = 1;
  options.read_timeout = milliseconds(777);
  options.read_timeout_ms = 4321;
  options.first_byte_timeout_ms = 1234;
  options.write_timeout_ms = -1;  // never, as before
  options.stream_idle_timeout_ms = 5678;
  options.stop_deadline_ms = 90;
  options.memory.automatic.recheck_interval_ms = 4567;
  StartedServer started;
  ASSERT_EQ(0, started.Start(options)) << started.server.last_error();
  EXPECT_EQ("4567", Setting(started.server, "memory.automatic.recheck_interval_ms"));
  EXPECT_EQ("4321", Setting(started.server, "read_timeout_ms"));
  EXPECT_EQ("1234", Setting(started.server, "first_byte_timeout_ms"));
  EXPECT_EQ("-1", Setting(started.server, "write_timeout_ms"));
  EXPECT_EQ("5678", Setting(started.server, "stream_idle_timeout_ms"));
  EXPECT_EQ("90", Setting(started.server, "stop_deadline_ms"));
}

TEST(DeprecatedServerOptions, SetTheyAreValidatedUnderTheNewName) {
  struct Case {
    void (*change)(ServerOptions&);
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](ServerOptions& o) { o.read_timeout_ms = 0; }, "read_timeout=0ms is invalid"},
      {[](ServerOptions& o) { o.stop_deadline_ms = -5; }, "stop_deadline=-5ms is invalid"},
      {[](ServerOptions& o) {
         o.registry_url = "etcd://127.0.0.1:1/x";
         o.registry_lease_ttl_ms = 999;
       },
       "registry_lease_ttl=999 ms is invalid"},
      {[](ServerOptions& o) {
         o.tls.cert_file = "cert.pem";
         o.tls.key_file = "key.pem";
         o.tls.reload_check_interval_ms = -1;
       },
       "tls.reload_check_interval=-1 ms is invalid"},
  };
  for (const Case& c : cases) {
    ServerOptions options;
    options.num_threads = 1;
    c.change(options);
    StartedServer started;
    EXPECT_EQ(-1, started.Start(options));
    EXPECT_NE(std::string::npos, started.server.last_error().find(c.expected))
        << "expected '" << c.expected << "' in: " << started.server.last_error();
  }
}

TEST(DeprecatedMemoryOptions, RecheckIntervalMsWinsWhenSet) {
  memory::AutoSettings settings;
  settings.recheck_interval = milliseconds(0);  // invalid
  std::string error;
  EXPECT_EQ(-1, memory::ValidateAutoSettings(settings, &error));
  EXPECT_NE(std::string::npos, error.find("recheck_interval=0ms")) << error;
  settings.recheck_interval_ms = 5;  // set: replaces it
  error.clear();
  EXPECT_EQ(0, memory::ValidateAutoSettings(settings, &error)) << error;
  memory::MemoryOptions options;
  options.automatic = settings;
  EXPECT_NE(nullptr, memory::MakeMessageMemory(memory::MemoryMode::kAuto, options, &error))
      << error;
}

TEST(DeprecatedChannelOptions, SetTheyWinOverTheDurations) {
  // The durations are invalid; the deprecated spellings set replace them, so Init() succeeds.
  ChannelOptions options;
  options.read_timeout = milliseconds(0);
  options.read_timeout_ms = 100;
  options.health_check_interval = milliseconds(0);
  options.health_check_interval_ms = 50;
  Channel channel;
  EXPECT_EQ(0, channel.Init("127.0.0.1:1", &options)) << channel.last_error();
}

TEST(DeprecatedChannelOptions, SetTheyAreValidatedUnderTheNewName) {
  struct Case {
    void (*change)(ChannelOptions&);
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](ChannelOptions& o) { o.read_timeout_ms = 0; }, "read_timeout=0ms"},
      {[](ChannelOptions& o) { o.write_timeout_ms = 0; }, "write_timeout=0ms"},
      {[](ChannelOptions& o) { o.health_check_interval_ms = 0; }, "health_check_interval=0ms"},
      {[](ChannelOptions& o) { o.health_check_timeout_ms = 7200000; },
       "health_check_timeout=7200000ms"},
      {[](ChannelOptions& o) { o.naming_refresh_interval_ms = -3; },
       "naming_refresh_interval=-3ms"},
  };
  for (const Case& c : cases) {
    ChannelOptions options;
    c.change(options);
    Channel channel;
    EXPECT_EQ(-1, channel.Init("127.0.0.1:1", &options));
    EXPECT_NE(std::string::npos, channel.last_error().find(c.expected))
        << "expected '" << c.expected << "' in: " << channel.last_error();
  }
}

// Through a PartitionChannel (whose Init reads the naming options before its partitions' Init).
TEST(DeprecatedChannelOptions, PartitionChannelAppliesThemToo) {
  class SlashParser : public PartitionParser {
   public:
    bool ParseFromTag(const std::string& tag, Partition* out) override {
      return std::sscanf(tag.c_str(), "%d/%d", &out->index, &out->num_partition_kinds) == 2;
    }
  };
  PartitionChannelOptions options;
  options.naming_refresh_interval = milliseconds(0);  // invalid
  options.naming_refresh_interval_ms = 100;           // set: replaces it
  PartitionChannel channel;
  EXPECT_EQ(0, channel.Init(1, new SlashParser, "list://127.0.0.1:1 1 0/1", "rr", &options))
      << channel.last_error();
  EXPECT_EQ(1, channel.partition_count());
  options.naming_refresh_interval_ms = -3;
  PartitionChannel invalid;
  EXPECT_EQ(-1, invalid.Init(1, new SlashParser, "list://127.0.0.1:1 1 0/1", "rr", &options));
  EXPECT_NE(std::string::npos, invalid.last_error().find("naming_refresh_interval=-3ms"))
      << invalid.last_error();
}

}  // namespace
}  // namespace arenarpc::e2e
