// Naming services on their own: URL parsing, list://, file:// reload, dns://localhost.
#include <gtest/gtest.h>

#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "cluster/naming_service.h"

namespace arenarpc::cluster {
namespace {

// Records every list a naming service pushes.
struct Recorder {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<ServerList> lists;

  NamingService::Listener Listener() {
    return [this](ServerList list) {
      std::lock_guard lock(mutex);
      lists.push_back(std::move(list));
      changed.notify_all();
    };
  }
  // Waits until a list of `n` servers arrived.
  bool WaitForSize(size_t n, std::chrono::milliseconds limit) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, limit, [&] { return !lists.empty() && lists.back().size() == n; });
  }
};

std::unique_ptr<NamingService> Make(std::string_view url, std::string* error) {
  NamingOptions options;
  options.refresh_interval = std::chrono::milliseconds(50);
  return MakeNamingService(url, options, error);
}

TEST(NamingUrl, InvalidUrlsFailWithAMessage) {
  const std::pair<const char*, const char*> cases[] = {
      {"127.0.0.1:80", "no scheme"},
      {"zk://127.0.0.1:2181/x", "unknown"},
      {"list://", "names no server"},
      {"list://127.0.0.1", "no port"},
      {"list://127.0.0.1:99999", "invalid port"},
      {"list://127.0.0.1:80 0", "invalid weight"},
      {"list://127.0.0.1:80 1 tag extra", "more than"},
      {"list://0.0.0.0:80", "concrete host"},
      {"dns://localhost", "not host:port"},
      {"dns://:80", "not host:port"},
      {"file://", "needs a path"},
  };
  for (const auto& [url, expected] : cases) {
    std::string error;
    EXPECT_EQ(Make(url, &error), nullptr) << url;
    EXPECT_NE(error.find(expected), std::string::npos) << url << " -> " << error;
  }
}

TEST(ListNaming, ParsesWeightsAndTagsSortedWithoutDuplicates) {
  std::string error;
  auto naming = Make("list://127.0.0.1:8002 3 blue, 127.0.0.1:8001,127.0.0.1:8001 5", &error);
  ASSERT_TRUE(naming) << error;
  Recorder recorder;
  ASSERT_TRUE(naming->Start(recorder.Listener(), &error)) << error;
  ASSERT_EQ(recorder.lists.size(), 1u);
  const ServerList& list = recorder.lists[0];
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].address(), "127.0.0.1:8001");
  EXPECT_EQ(list[0].weight, 1);
  EXPECT_EQ(list[1].address(), "127.0.0.1:8002");
  EXPECT_EQ(list[1].weight, 3);
  EXPECT_EQ(list[1].tag, "blue");
}

class FileNamingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("arenarpc_file_naming_" + std::to_string(::getpid()));
  }
  void TearDown() override { std::filesystem::remove(path_); }
  void Write(const std::string& text) {
    const auto tmp = path_.string() + ".tmp";
    std::ofstream(tmp) << text;
    std::filesystem::rename(tmp, path_);  // atomic replace, as deployment tools do
  }
  std::filesystem::path path_;
};

TEST_F(FileNamingTest, ReloadsWhenTheFileChangesAndKeepsTheLastGoodList) {
  Write("# servers\n127.0.0.1:7001\n127.0.0.1:7002 2\n");
  std::string error;
  auto naming = Make("file://" + path_.string(), &error);
  ASSERT_TRUE(naming) << error;
  Recorder recorder;
  ASSERT_TRUE(naming->Start(recorder.Listener(), &error)) << error;
  ASSERT_TRUE(recorder.WaitForSize(2, std::chrono::milliseconds(0)));
  Write("127.0.0.1:7001\n127.0.0.1:7002 2\n127.0.0.1:7003\n");
  EXPECT_TRUE(recorder.WaitForSize(3, std::chrono::seconds(3)));
  // A broken file: the naming service keeps the 3 servers (pushes nothing).
  Write("127.0.0.1:7001\nnot-an-address\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  {
    std::lock_guard lock(recorder.mutex);
    EXPECT_EQ(recorder.lists.back().size(), 3u);
  }
  Write("127.0.0.1:7004\n");
  EXPECT_TRUE(recorder.WaitForSize(1, std::chrono::seconds(3)));
  naming->Stop();
  std::lock_guard lock(recorder.mutex);
  EXPECT_EQ(recorder.lists.back()[0].address(), "127.0.0.1:7004");
}

TEST_F(FileNamingTest, MissingFileFailsStart) {
  std::string error;
  auto naming = Make("file://" + path_.string(), &error);
  ASSERT_TRUE(naming) << error;
  Recorder recorder;
  EXPECT_FALSE(naming->Start(recorder.Listener(), &error));
  EXPECT_NE(error.find("cannot stat"), std::string::npos) << error;
}

TEST(DnsNaming, LocalhostResolvesToLoopback) {
  std::string error;
  auto naming = Make("dns://localhost:8123", &error);
  ASSERT_TRUE(naming) << error;
  Recorder recorder;
  ASSERT_TRUE(naming->Start(recorder.Listener(), &error)) << error;
  ASSERT_EQ(recorder.lists.size(), 1u);
  ASSERT_FALSE(recorder.lists[0].empty());
  for (const ServerNode& node : recorder.lists[0]) {
    EXPECT_TRUE(node.endpoint.address().is_loopback()) << node.address();
    EXPECT_EQ(node.endpoint.port(), 8123);
  }
  naming->Stop();
}

TEST(DnsNaming, UnresolvableHostFailsStart) {
  std::string error;
  auto naming = Make("dns://no-such-host.invalid:80", &error);
  ASSERT_TRUE(naming) << error;
  Recorder recorder;
  EXPECT_FALSE(naming->Start(recorder.Listener(), &error));
  EXPECT_NE(error.find("cannot resolve"), std::string::npos) << error;
}

}  // namespace
}  // namespace arenarpc::cluster
