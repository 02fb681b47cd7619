// Live settings on a real server over loopback: /flags/NAME?setvalue=VALUE and
// Server::SetLiveSetting change max_concurrency (calls past the new limit get ELIMIT, then pass
// once it is raised), a method's memory mode while concurrent calls run (none lost, every reply's
// bytes equal heap's), refuse invalid values and unauthenticated or disallowed changes with the
// reason, and keep who changed what.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/error_codes.h"
#include "arenarpc/logging.h"
#include "http_client.h"
#include "server_fixture.h"

namespace arenarpc::e2e {
namespace {

constexpr char kEcho[] = "arenarpc.e2e.TestService.Echo";
// method_memory_mode[arenarpc.e2e.TestService.Echo], as a URL path segment.
constexpr char kEchoModePath[] = "method_memory_mode%5Barenarpc.e2e.TestService.Echo%5D";

// Accepts "token-<user>" and names <user>.
class TokenAuthenticator final : public Authenticator {
 public:
  int GenerateCredential(std::string* auth_str) const override {
    *auth_str = "token-alice";
    return 0;
  }
  int VerifyCredential(const std::string& auth_str, std::string_view /*client_addr*/,
                       AuthContext* out_ctx) const override {
    if (!auth_str.starts_with("token-")) return -1;
    out_ctx->set_user(auth_str.substr(6));
    return 0;
  }
};

class LiveSettingsTest : public ServerTest {
 protected:
  // One GET on a connection of its own.
  HttpResponse Get(const std::string& target, std::string_view extra_headers = {}) {
    HttpClient client(port_);
    EXPECT_TRUE(client.Send(HttpClient::Request("GET", target, {}, {}, extra_headers)));
    std::optional<HttpResponse> response = client.Read();
    EXPECT_TRUE(response.has_value()) << target;
    return response.value_or(HttpResponse{});
  }

  std::string Setting(const std::string& name) {
    for (const ServerSetting& setting : server_->ListSettings()) {
      if (setting.name == name) return setting.value;
    }
    ADD_FAILURE() << "no setting " << name;
    return "";
  }
};

TEST_P(LiveSettingsTest, FlagsListEverySettingAndWhichAreLive) {
  StartServer();
  const HttpResponse text = Get("/flags");
  EXPECT_EQ(200, text.status);
  EXPECT_NE(std::string::npos, text.body.find("# live: change with /flags/NAME?setvalue=VALUE\n"
                                              "max_concurrency = 0\n"));
  EXPECT_NE(std::string::npos,
            text.body.find("method_memory_mode[" + std::string(kEcho) + "] = " + GetParam()));
  EXPECT_NE(std::string::npos, text.body.find("memory.automatic.trial_calls = 128\n"));
  EXPECT_NE(std::string::npos, text.body.find("log_level = WARNING\n"));
  EXPECT_LT(text.body.find("max_concurrency = 0"), text.body.find("# fixed at Start()\n"));
  EXPECT_GT(text.body.find("num_threads = 2\n"), text.body.find("# fixed at Start()\n"));
  const HttpResponse json = Get("/flags?format=json");
  EXPECT_EQ("application/json", json.Header("content-type"));
  EXPECT_NE(std::string::npos,
            json.body.find(R"({"name":"max_queued_requests","value":"1024","live":true)"));
  EXPECT_NE(std::string::npos,
            json.body.find(R"({"name":"num_threads","value":"2","live":false})"));
  const HttpResponse html = Get("/flags?format=html");
  EXPECT_NE(std::string::npos, html.body.find("<form action=\"/flags/max_concurrency\">"));
  const HttpResponse one = Get("/flags/max_queued_requests");
  EXPECT_EQ(200, one.status);
  EXPECT_NE(std::string::npos, one.body.find("max_queued_requests = 1024\n"));
  EXPECT_EQ(std::string::npos, one.body.find("num_threads"));
  EXPECT_EQ(404, Get("/flags/no_such_setting").status);
}

TEST_P(LiveSettingsTest, MaxConcurrencyChangesWhileCallsRun) {
  StartServer();
  const HttpResponse set = Get("/flags/max_concurrency?setvalue=2");
  ASSERT_EQ(200, set.status) << set.body;
  EXPECT_EQ("max_concurrency: 0 -> 2\n", set.body);
  EXPECT_EQ(2, server_->GetServerStats().concurrency_limit);
  auto channel = MakeChannel();
  // Two calls held in flight; a third is past the new limit.
  std::vector<std::thread> held;
  std::atomic<int> held_ok{0};
  for (int i = 0; i < 2; ++i) {
    held.emplace_back([&] {
      TestService_Stub stub(channel.get());
      Controller controller;
      TestRequest request;
      request.set_message("held");
      request.set_delay_ms(1500);
      TestResponse response;
      stub.Echo(&controller, &request, &response, nullptr);
      if (!controller.Failed() && response.message() == "held") held_ok.fetch_add(1);
    });
  }
  ASSERT_TRUE(WaitForInFlight(2));
  Controller refused;
  EchoOnce(channel.get(), "third", &refused);
  EXPECT_EQ(ELIMIT, refused.ErrorCode()) << refused.ErrorText();
  EXPECT_NE(std::string::npos, refused.ErrorText().find("max_concurrency=2"))
      << refused.ErrorText();
  // Raised while the two still run: the same call passes.
  ASSERT_EQ(0, server_->SetLiveSetting("max_concurrency", "10")) << server_->last_error();
  EXPECT_EQ("", CallEcho(channel.get(), "third"));
  for (auto& thread : held) thread.join();
  EXPECT_EQ(2, held_ok.load());
  // "auto": the adaptive limit takes over (from its initial limit), and back to unlimited.
  ASSERT_EQ(0, server_->SetLiveSetting("max_concurrency", "auto")) << server_->last_error();
  EXPECT_EQ("auto", Setting("max_concurrency"));
  EXPECT_GT(server_->GetServerStats().concurrency_limit, 0);
  EXPECT_EQ("", CallEcho(channel.get(), "under auto"));
  ASSERT_EQ(0, server_->SetLiveSetting("max_concurrency", "0")) << server_->last_error();
  EXPECT_EQ(0, server_->GetServerStats().concurrency_limit);
}

TEST_P(LiveSettingsTest, MaxQueuedRequestsAndLogLevelChange) {
  StartServer();
  ASSERT_EQ(200, Get("/flags/max_queued_requests?setvalue=7").status);
  EXPECT_EQ("7", Setting("max_queued_requests"));
  const LogLevel before = MinLogLevel();
  ASSERT_EQ(200, Get("/flags/log_level?setvalue=error").status);
  EXPECT_EQ(LogLevel::kError, MinLogLevel());
  EXPECT_EQ("ERROR", Setting("log_level"));
  SetMinLogLevel(before);  // process-wide: leave it as the other tests expect
}

TEST_P(LiveSettingsTest, InvalidValuesAreRefusedWithTheReason) {
  StartServer();
  struct Case {
    std::string target;
    int status;
    std::string reason;
  };
  const std::string echo_mode = "/flags/" + std::string(kEchoModePath);
  const std::vector<Case> cases = {
      {"/flags/max_concurrency?setvalue=-3", 400, "max_concurrency=-3 is invalid"},
      {"/flags/max_concurrency?setvalue=lots", 400, "max_concurrency=lots is invalid"},
      {"/flags/max_queued_requests?setvalue=-1", 400, "expected a number >= 0"},
      {"/flags/max_queued_requests?setvalue=12abc", 400, "max_queued_requests=12abc is invalid"},
      {echo_mode + "?setvalue=bogus", 400, "bogus"},
      {"/flags/memory_mode?setvalue=", 400, "memory_mode= is invalid"},
      {"/flags/memory.automatic.trial_calls?setvalue=0", 400, "trial_calls"},
      {"/flags/memory.automatic.candidates?setvalue=heap,nope", 400, "nope"},
      {"/flags/memory.automatic.shape_change?setvalue=x", 400, "is not a number"},
      {"/flags/log_level?setvalue=loud", 400, "expected DEBUG, INFO, WARNING or ERROR"},
      {"/flags/num_threads?setvalue=4", 403, "num_threads is fixed at Start()"},
      {"/flags/no_such_setting?setvalue=1", 404, "no setting named 'no_such_setting'"},
      {"/flags?setvalue=1", 400, "setvalue needs a setting"},
  };
  for (const Case& c : cases) {
    const HttpResponse response = Get(c.target);
    EXPECT_EQ(c.status, response.status) << c.target << ": " << response.body;
    EXPECT_NE(std::string::npos, response.body.find(c.reason)) << c.target << ": " << response.body;
  }
  EXPECT_EQ(-1, server_->SetLiveSetting("max_concurrency", "-3"));
  EXPECT_NE(std::string::npos, server_->last_error().find("max_concurrency=-3 is invalid"))
      << server_->last_error();
  // Nothing changed, nothing logged.
  EXPECT_EQ("0", Setting("max_concurrency"));
  EXPECT_EQ("1024", Setting("max_queued_requests"));
  EXPECT_EQ(GetParam(), Setting("method_memory_mode[" + std::string(kEcho) + "]"));
  EXPECT_EQ("128", Setting("memory.automatic.trial_calls"));
  EXPECT_TRUE(server_->SettingChanges().empty());
  EXPECT_EQ("", CallEcho(MakeChannel().get(), "still serving"));
}

TEST_P(LiveSettingsTest, TheChangeLogShowsWhoOldAndNew) {
  StartServer();
  ASSERT_EQ(200, Get("/flags?name=max_queued_requests&setvalue=7").status);
  ASSERT_EQ(0, server_->SetLiveSetting("memory.automatic.trial_calls", "24"))
      << server_->last_error();
  const std::vector<SettingChange> changes = server_->SettingChanges();
  ASSERT_EQ(2u, changes.size());
  EXPECT_TRUE(changes[0].peer.starts_with("127.0.0.1:")) << changes[0].peer;
  EXPECT_EQ("", changes[0].principal);
  EXPECT_EQ("max_queued_requests", changes[0].name);
  EXPECT_EQ("1024", changes[0].old_value);
  EXPECT_EQ("7", changes[0].new_value);
  EXPECT_EQ("Server::SetLiveSetting", changes[1].peer);
  EXPECT_EQ("128", changes[1].old_value);
  EXPECT_EQ("24", changes[1].new_value);
  EXPECT_LE(std::chrono::system_clock::now() - changes[0].when, std::chrono::minutes(1));
  const HttpResponse text = Get("/flags");
  EXPECT_NE(std::string::npos,
            text.body.find(" max_queued_requests: 1024 -> 7 by " + changes[0].peer + "\n"))
      << text.body;
  EXPECT_NE(std::string::npos,
            text.body.find(" memory.automatic.trial_calls: 128 -> 24 by Server::SetLiveSetting\n"));
  const HttpResponse json = Get("/flags?format=json");
  EXPECT_NE(std::string::npos,
            json.body.find(R"("name":"max_queued_requests","old_value":"1024","new_value":"7")"))
      << json.body;
  // The history is bounded.
  for (int i = 0; i < static_cast<int>(kSettingHistory) + 5; ++i) {
    ASSERT_EQ(0, server_->SetLiveSetting("max_queued_requests", std::to_string(100 + i)));
  }
  EXPECT_EQ(kSettingHistory, server_->SettingChanges().size());
  EXPECT_EQ(std::to_string(100 + kSettingHistory + 4), server_->SettingChanges().back().new_value);
}

TEST_P(LiveSettingsTest, AuthenticationGuardsChanges) {
  TokenAuthenticator auth;
  ServerOptions options;
  options.auth = &auth;
  StartServer(options);
  const HttpResponse anonymous = Get("/flags/max_concurrency?setvalue=5");
  EXPECT_EQ(403, anonymous.status);
  EXPECT_EQ(std::to_string(ERPCAUTH), anonymous.Header("x-bd-error-code"));
  EXPECT_EQ(403, Get("/flags/max_concurrency?setvalue=5", "Authorization: wrong\r\n").status);
  EXPECT_EQ("0", Setting("max_concurrency"));
  EXPECT_TRUE(server_->SettingChanges().empty());
  const HttpResponse alice =
      Get("/flags/max_concurrency?setvalue=5", "Authorization: token-alice\r\n");
  ASSERT_EQ(200, alice.status) << alice.body;
  EXPECT_EQ("5", Setting("max_concurrency"));
  ASSERT_EQ(1u, server_->SettingChanges().size());
  EXPECT_EQ("alice", server_->SettingChanges()[0].principal);
  const HttpResponse page = Get("/flags", "Authorization: token-alice\r\n");
  EXPECT_NE(std::string::npos, page.body.find("max_concurrency: 0 -> 5 by 127.0.0.1:"));
  EXPECT_NE(std::string::npos, page.body.find(" (alice)\n"));
}

TEST_P(LiveSettingsTest, PagesPolicyGuardsChanges) {
  ServerOptions options;
  options.settings_from_pages = false;
  options.main_port_pages = MainPortPages::kHealth;
  StartServer(options);
  EXPECT_EQ(404, Get("/flags/max_concurrency?setvalue=5").status);  // pages not on this port
  EXPECT_EQ("0", Setting("max_concurrency"));
  server_.reset();
  options.main_port_pages = MainPortPages::kAll;
  StartServer(options);
  const HttpResponse refused = Get("/flags/max_concurrency?setvalue=5");
  EXPECT_EQ(403, refused.status);
  EXPECT_NE(std::string::npos, refused.body.find("settings_from_pages=false")) << refused.body;
  EXPECT_EQ(200, Get("/flags").status);  // still listed
  EXPECT_EQ("0", Setting("max_concurrency"));
  EXPECT_EQ(0, server_->SetLiveSetting("max_concurrency", "5")) << server_->last_error();
  EXPECT_EQ("5", Setting("max_concurrency"));
}

TEST_P(LiveSettingsTest, SetLiveSettingNeedsARunningServer) {
  Server idle;
  EXPECT_EQ(-1, idle.SetLiveSetting("max_concurrency", "5"));
  EXPECT_NE(std::string::npos, idle.last_error().find("not running")) << idle.last_error();
  EXPECT_TRUE(idle.ListSettings().empty());
}

// Request shapes of the load: a message and 0..7 items of different lengths.
TestRequest Shape(int i) {
  TestRequest request;
  request.set_message("m" + std::to_string(i % 8));
  for (int k = 0; k < i % 8; ++k) request.add_items(std::string(1 + 37 * k, 'a' + k));
  return request;
}

// Switching the method's memory mode (and "auto"'s trial settings, which rebuild "auto") while
// clients call it: every call is answered, with the bytes heap gives.
TEST_P(LiveSettingsTest, StrategySwitchUnderLoadLosesNoCallAndKeepsTheBytes) {
  StartServer();
  ASSERT_EQ(0, server_->SetLiveSetting(std::string("method_memory_mode[") + kEcho + "]", "heap"));
  std::vector<std::string> heap_bytes;
  {
    RawClient client(port_);
    for (int i = 0; i < 8; ++i) {
      const TestRequest request = Shape(i);
      const RawReply reply = client.Call(RequestFor(&request));
      ASSERT_EQ(0, reply.error_code) << reply.error_text;
      heap_bytes.push_back(reply.frame.payload.ToString());
    }
  }
  constexpr int kClients = 4;
  const int calls_per_client = 300 * kLoadScale;
  std::atomic<int> answered{0}, mismatched{0}, failed{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      RawClient client(port_);
      for (int i = 0; i < calls_per_client; ++i) {
        const TestRequest request = Shape(i + c);
        const RawReply reply = client.Call(RequestFor(&request));
        if (reply.error_code != 0) {
          failed.fetch_add(1);
        } else if (reply.frame.payload.ToString() != heap_bytes[(i + c) % 8]) {
          mismatched.fetch_add(1);
        }
        answered.fetch_add(1);
      }
    });
  }
  std::thread switcher([&] {
    const char* const modes[] = {"reuse", "arena", "auto", "paged", "heap"};
    int n = 0;
    while (!done.load()) {
      const std::string mode = modes[n % 5];
      if (server_->SetLiveSetting(std::string("method_memory_mode[") + kEcho + "]", mode) != 0) {
        ADD_FAILURE() << server_->last_error();
      }
      if (n % 7 == 3 &&
          server_->SetLiveSetting("memory.automatic.trial_calls", std::to_string(16 + n % 32)) !=
              0) {
        ADD_FAILURE() << server_->last_error();
      }
      ++n;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  for (auto& thread : clients) thread.join();
  done.store(true);
  switcher.join();
  EXPECT_EQ(kClients * calls_per_client, answered.load());
  EXPECT_EQ(0, failed.load());
  EXPECT_EQ(0, mismatched.load());
  EXPECT_GT(server_->SettingChanges().size(), 5u);  // it switched while the calls ran
  // The last mode serves, and what it handed out went back.
  ASSERT_EQ(0, server_->SetLiveSetting(std::string("method_memory_mode[") + kEcho + "]", "reuse"));
  EXPECT_EQ("", CallEcho(MakeChannel().get(), "after"));
  EXPECT_EQ("reuse", server_->GetMethodStats(kEcho).memory_mode);
  ExpectAllPairsReleased(kEcho);
}

// "auto" (the default) and one fixed strategy are enough here: the switch test goes through all.
INSTANTIATE_TEST_SUITE_P(Modes, LiveSettingsTest, ::testing::Values("auto", "reuse"), ModeName);

}  // namespace
}  // namespace arenarpc::e2e
