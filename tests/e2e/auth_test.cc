// ServerOptions::auth / ChannelOptions::auth (docs/auth.md): credentials over baidu_std (once per
// connection) and HTTP (per request, pages included), the AuthContext on the handler's
// Controller, and brpc's ERPCAUTH "Fail to authenticate" for the rest.

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <string>

#include "arenarpc/authenticator.h"
#include "http_client.h"
#include "server_fixture.h"

namespace arenarpc::e2e {
namespace {

// Accepts "token-<user>" for the users it knows; counts its calls.
class TokenAuthenticator final : public Authenticator {
 public:
  explicit TokenAuthenticator(std::string token) : token_(std::move(token)) {}
  int GenerateCredential(std::string* auth_str) const override {
    if (token_.empty()) return -1;
    *auth_str = token_;
    return 0;
  }
  int VerifyCredential(const std::string& auth_str, std::string_view client_addr,
                       AuthContext* out_ctx) const override {
    verified_.fetch_add(1);
    if (client_addr.rfind("127.0.0.1:", 0) != 0) return -1;
    if (auth_str != "token-alice" && auth_str != "token-bob") return -1;
    out_ctx->set_user(auth_str.substr(6));
    return 0;
  }
  int verified() const { return verified_.load(); }

 private:
  std::string token_;
  mutable std::atomic<int> verified_{0};
};

class AuthTest : public ServerTest {
 protected:
  void StartWithAuth() {
    ServerOptions options;
    options.auth = &server_auth_;
    StartServer(options);
  }
  std::unique_ptr<Channel> ChannelWith(const Authenticator* auth) {
    ChannelOptions options;
    options.auth = auth;
    options.max_retry = 0;
    return MakeChannel(options);
  }
  // Echo: the handler's AuthContext user, or the error as "[code] text".
  std::string User(Channel* channel) {
    TestService_Stub stub(channel);
    Controller controller;
    TestRequest request;
    request.set_message("m");
    TestResponse response;
    stub.Echo(&controller, &request, &response, nullptr);
    if (controller.Failed()) {
      return "[" + std::to_string(controller.ErrorCode()) + "] " + controller.ErrorText();
    }
    return response.auth_user();
  }
  TokenAuthenticator server_auth_{""};
};

TEST_P(AuthTest, BaiduStdCredentialIsVerifiedOncePerConnection) {
  StartWithAuth();
  TokenAuthenticator alice("token-alice");
  auto channel = ChannelWith(&alice);
  EXPECT_EQ("alice", User(channel.get()));
  EXPECT_EQ("alice", User(channel.get()));
  EXPECT_EQ("alice", User(channel.get()));
  EXPECT_EQ(1, server_auth_.verified());  // one connection: verified on its first request
  TokenAuthenticator mallory("token-mallory");
  const std::string refused = User(ChannelWith(&mallory).get());
  EXPECT_NE(std::string::npos, refused.find("[1004]")) << refused;
  EXPECT_NE(std::string::npos, refused.find("Fail to authenticate")) << refused;
  const std::string anonymous = User(ChannelWith(nullptr).get());
  EXPECT_NE(std::string::npos, anonymous.find("[1004]")) << anonymous;
  TokenAuthenticator broken("");  // GenerateCredential fails: the call fails before sending
  EXPECT_NE(std::string::npos, User(ChannelWith(&broken).get()).find("[1004]"));
  EXPECT_EQ(2u, StatSoon(&ServerStats::rejected_auth, 2));
  // Without a server authenticator the credential is ignored and no context is shown.
  server_.reset();
  StartServer();
  EXPECT_EQ("", User(ChannelWith(&alice).get()));
}

TEST_P(AuthTest, HttpCredentialIsVerifiedPerRequestAndGuardsThePages) {
  StartWithAuth();
  auto status = [&](const std::string& request) {
    HttpClient client(port_);
    EXPECT_TRUE(client.Send(request));
    std::optional<HttpResponse> response = client.Read();
    return response ? std::to_string(response->status) + " " + response->body : "none";
  };
  const std::string echo =
      HttpClient::Request("POST", "/arenarpc.e2e.TestService/Echo", R"({"message":"m"})");
  const std::string bob_echo = HttpClient::Request(
      "POST", "/arenarpc.e2e.TestService/Echo", R"({"message":"m"})", "application/json",
      "Authorization: token-bob\r\n");
  EXPECT_NE(std::string::npos, status(bob_echo).find("\"auth_user\":\"bob\"")) << status(bob_echo);
  EXPECT_EQ(0u, status(echo).rfind("403", 0)) << status(echo);
  // Per request: one keep-alive connection, a good request, then one without the header.
  HttpClient client(port_);
  ASSERT_TRUE(client.Send(bob_echo + echo));
  std::optional<HttpResponse> first = client.Read(), second = client.Read();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(200, first->status);
  EXPECT_EQ(403, second->status);
  // Pages: /health stays open (load balancers); the others need the credential.
  EXPECT_EQ("200 OK\n", status(HttpClient::Request("GET", "/health")));
  EXPECT_EQ(0u, status(HttpClient::Request("GET", "/connections")).rfind("403 Fail to authenticate", 0));
  EXPECT_EQ(0u, status(HttpClient::Request("GET", "/connections", "", "application/json",
                                           "Authorization: token-alice\r\n"))
                    .rfind("200", 0));
}

ARENARPC_ALL_MODES(AuthTest);

}  // namespace
}  // namespace arenarpc::e2e
