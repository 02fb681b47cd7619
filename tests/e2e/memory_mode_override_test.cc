// ARENARPC_MEMORY_MODE: one strategy for every method, replacing memory_mode, memory_strategy and
// every per-method override of the options; a bad value fails Start() naming the variable.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "arenarpc/channel.h"
#include "arenarpc/controller.h"
#include "arenarpc/memory/message_memory.h"
#include "arenarpc/server.h"
#include "http_client.h"
#include "test_service.h"

namespace arenarpc::e2e {
namespace {

constexpr const char* kEcho = "arenarpc.e2e.TestService.Echo";
constexpr const char* kEcho2 = "arenarpc.e2e.TestService.Echo2";

// Sets the variable for one scope (tests of this binary run one at a time).
class ScopedMemoryModeVariable {
 public:
  explicit ScopedMemoryModeVariable(const char* value) {
    ::setenv("ARENARPC_MEMORY_MODE", value, 1);
  }
  ~ScopedMemoryModeVariable() { ::unsetenv("ARENARPC_MEMORY_MODE"); }
  ScopedMemoryModeVariable(const ScopedMemoryModeVariable&) = delete;
  ScopedMemoryModeVariable& operator=(const ScopedMemoryModeVariable&) = delete;
};

// Every kind of memory choice the options can make, none of them `reuse`.
ServerOptions OptionsChoosingEverything() {
  ServerOptions options;
  options.num_threads = 1;
  options.memory_mode = "heap";
  options.memory_strategy = memory::MakeMessageMemory("arena", options.memory, nullptr);
  options.method_memory_mode[kEcho] = "paged";
  options.method_memory_strategy[kEcho2] =
      memory::MakeMessageMemory(memory::MemoryMode::kAuto, options.memory, nullptr);
  return options;
}

// The test service on a server of its own; Start() returns what Server::Start() returned.
class MemoryModeOverrideTest : public ::testing::Test {
 protected:
  int Start(const ServerOptions& options) {
    EXPECT_EQ(0, server_.AddService(&service_, SERVER_DOESNT_OWN_SERVICE));
    return server_.Start("127.0.0.1:0", options);
  }
  TestServiceImpl service_;
  Server server_;
};

void ExpectEchoWorks(int port) {
  Channel channel;
  ChannelOptions channel_options;
  ASSERT_EQ(0, channel.Init("127.0.0.1:" + std::to_string(port), &channel_options));
  TestService_Stub stub(&channel);
  for (int i = 0; i < 3; ++i) {
    Controller controller;
    TestRequest request;
    request.set_message("m" + std::to_string(i));
    request.add_items("item");
    TestResponse response;
    stub.Echo(&controller, &request, &response, nullptr);
    ASSERT_FALSE(controller.Failed()) << controller.ErrorText();
    EXPECT_EQ(request.message(), response.message());
  }
}

TEST_F(MemoryModeOverrideTest, ReplacesEveryMemoryChoiceOfTheOptions) {
  ScopedMemoryModeVariable mode("reuse");
  ASSERT_EQ(0, Start(OptionsChoosingEverything())) << server_.last_error();
  EXPECT_EQ("reuse", server_.GetMethodStats(kEcho).memory_mode);
  EXPECT_EQ("reuse", server_.GetMethodStats(kEcho2).memory_mode);
  ExpectEchoWorks(server_.listen_port());
  EXPECT_GT(server_.GetMethodStats(kEcho).method_memory.acquired, 0u);
  // The server's own pages say so too.
  HttpClient http(server_.listen_port());
  ASSERT_TRUE(http.Send("GET /memory HTTP/1.1\r\nHost: x\r\n\r\n"));
  const auto page = http.Read();
  ASSERT_TRUE(page.has_value());
  EXPECT_NE(std::string::npos, page->body.find(std::string(kEcho) + "\n  strategy = reuse"))
      << page->body;
  EXPECT_EQ(std::string::npos, page->body.find("strategy = paged")) << page->body;
}

TEST_F(MemoryModeOverrideTest, WithoutTheVariableTheOptionsChoose) {
  ::unsetenv("ARENARPC_MEMORY_MODE");
  ASSERT_EQ(0, Start(OptionsChoosingEverything())) << server_.last_error();
  EXPECT_EQ("paged", server_.GetMethodStats(kEcho).memory_mode);
  EXPECT_EQ("auto", server_.GetMethodStats(kEcho2).memory_mode);
}

TEST_F(MemoryModeOverrideTest, AnEmptyValueIsNoOverride) {
  ScopedMemoryModeVariable mode("");
  ServerOptions options;
  options.num_threads = 1;
  options.memory_mode = "arena";
  ASSERT_EQ(0, Start(options)) << server_.last_error();
  EXPECT_EQ("arena", server_.GetMethodStats(kEcho).memory_mode);
}

TEST_F(MemoryModeOverrideTest, OptionsTakeTheEnumOrItsNameAndStartNamesAnUnknownOne) {
  ServerOptions options;
  options.memory_mode = memory::MemoryMode::kPaged;
  options.method_memory_mode[kEcho2] = memory::MemoryMode::kReuse;
  ASSERT_EQ(0, Start(options)) << server_.last_error();
  EXPECT_EQ("paged", server_.GetMethodStats(kEcho).memory_mode);
  EXPECT_EQ("reuse", server_.GetMethodStats(kEcho2).memory_mode);
  Server other;
  ASSERT_EQ(0, other.AddService(&service_, SERVER_DOESNT_OWN_SERVICE));
  options.memory_mode = "pool";
  EXPECT_EQ(-1, other.Start("127.0.0.1:0", options));
  EXPECT_NE(std::string::npos, other.last_error().find("memory_mode='pool' is invalid"))
      << other.last_error();
}

TEST_F(MemoryModeOverrideTest, ABadValueFailsStartNamingTheVariable) {
  ScopedMemoryModeVariable mode("pool");
  EXPECT_EQ(-1, Start(ServerOptions{}));
  EXPECT_NE(std::string::npos,
            server_.last_error().find("ARENARPC_MEMORY_MODE='pool' is invalid (expected heap, "
                                     "arena, paged, reuse, auto)"))
      << server_.last_error();
}

}  // namespace
}  // namespace arenarpc::e2e
