// ServerOptions::auth / ChannelOptions::auth (docs/auth.md): credentials over baidu_std (once per
// connection), HTTP and gRPC (per request, pages included), the AuthContext on the handler's
// Controller, and brpc's ERPCAUTH "Fail to authenticate" for the rest. Then interceptors
// (docs/interceptors.md): server-side on baidu_std, HTTP and gRPC (Python grpcio), order and
// first refusal, the mTLS and Authenticator identities they see, exceptions and slow ones;
// client-side adding a credential, refusing before send, AfterReceive, concurrently.

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <google/protobuf/descriptor.h>

#include "../press/run_shell.h"
#include "arenarpc/authenticator.h"
#include "arenarpc/callback.h"
#include "arenarpc/error_codes.h"
#include "arenarpc/interceptor.h"
#include "http_client.h"
#include "server_fixture.h"
#include "test_pki.h"

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

// Echo of `message`: "ok <the handler's AuthContext user>" or the error as "[code] text".
std::string EchoOutcome(Channel* channel, const std::string& message) {
  Controller controller;
  const TestResponse response = EchoOnce(channel, message, &controller);
  if (controller.Failed()) {
    return "[" + std::to_string(controller.ErrorCode()) + "] " + controller.ErrorText();
  }
  return "ok " + response.auth_user();
}

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
    const std::string outcome = EchoOutcome(channel, "m");
    return outcome.rfind("ok ", 0) == 0 ? outcome.substr(3) : outcome;
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
  // Two Authorization headers are refused whichever comes first, a valid one included.
  for (const char* headers : {"Authorization: token-bob\r\nAuthorization: token-mallory\r\n",
                              "Authorization: token-mallory\r\nAuthorization: token-bob\r\n"}) {
    EXPECT_EQ(0u, status(HttpClient::Request("POST", "/arenarpc.e2e.TestService/Echo",
                                             R"({"message":"m"})", "application/json", headers))
                      .rfind("403", 0))
        << headers;
    EXPECT_EQ(0u, status(HttpClient::Request("GET", "/connections", "", "application/json", headers))
                      .rfind("403", 0))
        << headers;
  }
}

TEST_P(AuthTest, GrpcChannelSendsItsCredentialAsAuthorizationMetadataPerCall) {
  StartWithAuth();
  auto grpc_channel = [&](const Authenticator* auth) {
    ChannelOptions options;
    options.protocol = "grpc";
    options.auth = auth;
    options.max_retry = 0;
    return MakeChannel(options);
  };
  TokenAuthenticator alice("token-alice");
  auto channel = grpc_channel(&alice);
  EXPECT_EQ("alice", User(channel.get()));
  EXPECT_EQ("alice", User(channel.get()));
  EXPECT_EQ(2, server_auth_.verified());  // HTTP/2: every request carries and checks it
  TokenAuthenticator mallory("token-mallory");
  const std::string refused = User(grpc_channel(&mallory).get());
  EXPECT_NE(std::string::npos, refused.find("[1004]")) << refused;  // UNAUTHENTICATED
  EXPECT_NE(std::string::npos, User(grpc_channel(nullptr).get()).find("[1004]"));
  TokenAuthenticator broken("");  // GenerateCredential fails: not sent
  EXPECT_NE(std::string::npos, User(grpc_channel(&broken).get()).find("Fail to generate"));
  EXPECT_EQ(4, server_auth_.verified());
}

ARENARPC_ALL_MODES(AuthTest);

// What interceptors saw, in the order they ran: "<name>:<method>:<user>:<tls cn>".
class CallLog {
 public:
  void Add(std::string entry) {
    std::lock_guard lock(mutex_);
    entries_.push_back(std::move(entry));
  }
  // The entries so far, joined by ' '; clears them.
  std::string Take() {
    std::lock_guard lock(mutex_);
    std::string joined;
    for (const std::string& entry : entries_) joined += (joined.empty() ? "" : " ") + entry;
    entries_.clear();
    return joined;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> entries_;
};

// Holds the threads of interceptors that wait on it until opened (at most 10 s).
class Gate {
 public:
  void Open() { open_.store(true); }
  void Wait() const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!open_.load() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

 private:
  std::atomic<bool> open_{false};
};

// Logs what it saw; acts on Echo messages that name it: "refuse-<name>" (EPERM), "throw-<name>",
// "negative-<name>" (-1), "fields-<name>" (EINVAL naming the user fields), "slow-<name>" (blocks its thread until the gate opens, then lets the
// call go on).
class NamedInterceptor final : public ServerInterceptor {
 public:
  NamedInterceptor(std::string name, CallLog* log, const Gate* gate = nullptr)
      : name_(std::move(name)), log_(log), gate_(gate) {}
  int Intercept(const InterceptedServerCall& call, std::string* error_text) const override {
    const Controller& controller = call.controller;
    const AuthContext* auth = controller.auth_context();
    const TlsPeer* tls = controller.tls_peer();
    log_->Add(name_ + ":" + call.method.name() + ":" + (auth ? auth->user() : "-") + ":" +
              (tls && tls->verified ? tls->common_name : "-"));
    const auto* request = dynamic_cast<const TestRequest*>(&call.request);
    const std::string message = request ? request->message() : "";
    if (message == "refuse-" + name_) {
      *error_text = name_ + " says no";
      return EPERM;
    }
    if (message == "throw-" + name_) throw std::runtime_error("boom");
    if (message == "negative-" + name_) return -1;
    if (message == "fields-" + name_) {  // refuses, naming the request's user fields
      *error_text = "fields:";
      for (const auto& [key, value] : call.controller.request_user_fields()) {
        *error_text += " " + key + "=" + value;
      }
      return EINVAL;
    }
    if (message == "slow-" + name_ && gate_ != nullptr) gate_->Wait();
    return 0;
  }

 private:
  std::string name_;
  CallLog* log_;
  const Gate* gate_;
};

// Refuses calls from clients without a verified mTLS certificate of CN=client-a.
class MtlsOnly final : public ServerInterceptor {
 public:
  int Intercept(const InterceptedServerCall& call, std::string* error_text) const override {
    const TlsPeer* peer = call.controller.tls_peer();
    if (peer != nullptr && peer->verified && peer->common_name == "client-a") return 0;
    *error_text = "client-a's certificate required";
    return EPERM;
  }
};

// Client side: logs "<name>.before" / "<name>.after=<error code>", may add a credential or refuse.
class ClientSide final : public ClientInterceptor {
 public:
  ClientSide(std::string name, CallLog* log, std::string credential = "", bool refuse = false)
      : name_(std::move(name)), log_(log), credential_(std::move(credential)), refuse_(refuse) {}
  int BeforeSend(const InterceptedClientCall& call, std::string* credential,
                 std::string* error_text) const override {
    log_->Add(name_ + ".before:" + call.method.name());
    if (!credential_.empty()) *credential = credential_;
    call.controller.request_user_fields()["x-" + name_] = "1";
    if (refuse_) {
      *error_text = name_ + " refuses to send";
      return EPERM;
    }
    return 0;
  }
  void AfterReceive(const google::protobuf::MethodDescriptor& method, Controller& controller,
                    const google::protobuf::Message& response) const override {
    const auto* echoed = dynamic_cast<const TestResponse*>(&response);
    log_->Add(name_ + ".after=" + std::to_string(controller.ErrorCode()) + ":" +
              (controller.Failed() || echoed == nullptr ? "" : echoed->auth_user()));
  }

 private:
  std::string name_;
  CallLog* log_;
  std::string credential_;
  bool refuse_;
};

class InterceptorTest : public PkiServerTest {
 protected:

  void StartIntercepted(ServerOptions options = {}) {
    options.auth = &server_auth_;
    options.interceptors = {std::make_shared<NamedInterceptor>("A", &log_, &gate_),
                            std::make_shared<NamedInterceptor>("B", &log_)};
    StartServer(options);
  }
  static std::string Echo(Channel* channel, const std::string& message) {
    return EchoOutcome(channel, message);
  }
  std::string HttpEcho(const std::string& message, const std::string& token) {
    HttpClient client(port_);
    EXPECT_TRUE(client.Send(HttpClient::Request(
        "POST", "/arenarpc.e2e.TestService/Echo", R"({"message":")" + message + R"("})",
        "application/json", "Authorization: " + token + "\r\n")));
    std::optional<HttpResponse> response = client.Read();
    if (!response) return "none";
    return std::to_string(response->status) + " " + response->Header("x-bd-error-code") + " " +
           response->body;
  }
  std::unique_ptr<Channel> AliceChannel() {
    ChannelOptions options;
    options.auth = &alice_;
    options.max_retry = 0;
    return MakeChannel(options);
  }
  uint64_t EchoErrors() { return server_->GetMethodStats("arenarpc.e2e.TestService.Echo").errors; }

  TokenAuthenticator server_auth_{""};
  TokenAuthenticator alice_{"token-alice"};
  CallLog log_;
  Gate gate_;
};

TEST_P(InterceptorTest, ServerInterceptorsRunInOrderAndTheFirstRefusalWins) {
  StartIntercepted();
  auto channel = AliceChannel();
  EXPECT_EQ("ok alice", Echo(channel.get(), "hi"));
  EXPECT_EQ("A:Echo:alice:- B:Echo:alice:-", log_.Take());  // in order, the identity seen
  EXPECT_EQ(1, service_->handler_calls());

  const uint64_t errors = EchoErrors();
  const std::string refused = Echo(channel.get(), "refuse-A");
  EXPECT_EQ(0u, refused.rfind("[1] ", 0)) << refused;  // EPERM, as any failed call
  EXPECT_NE(std::string::npos, refused.find("A says no")) << refused;
  EXPECT_EQ("A:Echo:alice:-", log_.Take());  // B never ran
  EXPECT_NE(std::string::npos, Echo(channel.get(), "refuse-B").find("B says no"));
  EXPECT_EQ("A:Echo:alice:- B:Echo:alice:-", log_.Take());
  const std::string thrown = Echo(channel.get(), "throw-A");
  EXPECT_EQ(0u, thrown.rfind("[2001] ", 0)) << thrown;  // EINTERNAL
  EXPECT_NE(std::string::npos, thrown.find("Interceptor threw: boom")) << thrown;
  const std::string negative = Echo(channel.get(), "negative-B");
  EXPECT_EQ(0u, negative.rfind("[1018] ", 0)) << negative;  // EREJECT
  EXPECT_NE(std::string::npos, negative.find("Rejected by interceptor")) << negative;
  log_.Take();
  EXPECT_EQ(1, service_->handler_calls());       // no refused call reached the handler
  EXPECT_EQ(errors + 4, EchoErrors());           // each counted as a failed call of Echo
  EXPECT_EQ("ok alice", Echo(channel.get(), "still-open"));  // the connection still serves
  log_.Take();

  // HTTP/JSON: the same interceptors, the per-request Authorization identity.
  const std::string http_refused = HttpEcho("refuse-B", "token-bob");
  EXPECT_EQ(0u, http_refused.find("500 1 ")) << http_refused;  // EPERM's HTTP status
  EXPECT_NE(std::string::npos, http_refused.find("B says no")) << http_refused;
  EXPECT_EQ("A:Echo:bob:- B:Echo:bob:-", log_.Take());
  EXPECT_EQ(0u, HttpEcho("hi", "token-bob").rfind("200", 0));
  EXPECT_EQ(0u, HttpEcho("hi", "token-mallory").rfind("403 1004", 0));  // the Authenticator first
  EXPECT_EQ("A:Echo:bob:- B:Echo:bob:-", log_.Take());  // only the authenticated call was seen
  EXPECT_EQ(3, service_->handler_calls());
}

TEST_P(InterceptorTest, GrpcMetadataAuthenticatesAndInterceptorsRefuse) {
  StartIntercepted();
  char pattern[] = "/tmp/arenarpc-intercept-py-XXXXXX";
  ASSERT_NE(nullptr, mkdtemp(pattern));
  const std::string gen = pattern;
  ASSERT_EQ(0, press::RunShell("/usr/bin/protoc --python_out=" + gen +
                               " -I" ARENARPC_SOURCE_DIR "/tests/e2e e2e_test.proto")
                   .exit_code);
  const press::ShellOutput run = press::RunShell(
      "timeout 60 /usr/bin/python3 " ARENARPC_SOURCE_DIR "/tests/e2e/grpc_auth_client.py " +
      std::to_string(port_) + " " + gen);
  std::filesystem::remove_all(gen);
  EXPECT_EQ(0, run.exit_code) << run.out;
  for (const char* name :
       {"authorized", "unauthenticated", "per_request", "two_credentials", "interceptor_refuses"}) {
    EXPECT_NE(std::string::npos, run.out.find(std::string("OK ") + name + "\n"))
        << name << "\n" << run.out;
  }
  const std::string seen = log_.Take();
  EXPECT_NE(std::string::npos, seen.find("A:Echo:alice:- B:Echo:alice:-")) << seen;
  EXPECT_NE(std::string::npos, seen.find("B:Echo:bob:-")) << seen;
  EXPECT_EQ(std::string::npos, seen.find(":-:-")) << seen;  // no unauthenticated call seen
  // none, mallory, none (per_request), two pairs of credentials
  EXPECT_EQ(5u, StatSoon(&ServerStats::rejected_auth, 5));
}

TEST_P(InterceptorTest, InterceptorsSeeTheMtlsIdentity) {
  ServerOptions options;
  options.tls.cert_file = File("server.pem");
  options.tls.key_file = File("server.key");
  options.tls.client_ca_file = File("ca.pem");
  options.interceptors = {std::make_shared<NamedInterceptor>("A", &log_),
                          std::make_shared<MtlsOnly>()};
  StartServer(options);
  ChannelOptions tls;
  tls.timeout_ms = 10000;
  tls.tls.enable = true;
  tls.tls.ca_file = File("ca.pem");
  tls.tls.cert_file = File("client.pem");
  tls.tls.key_file = File("client.key");
  Channel mtls;
  ASSERT_EQ(0, mtls.Init("localhost:" + std::to_string(port_), &tls)) << mtls.last_error();
  EXPECT_EQ("ok ", Echo(&mtls, "hi"));
  EXPECT_EQ("A:Echo:-:client-a", log_.Take());
  // Clear text on the same port: no certificate, refused by the interceptor.
  const std::string clear = Echo(MakeChannel().get(), "hi");
  EXPECT_NE(std::string::npos, clear.find("client-a's certificate required")) << clear;
  EXPECT_EQ("A:Echo:-:-", log_.Take());
}

TEST_P(InterceptorTest, ASlowInterceptorHoldsOnlyItsOwnCall) {
  StartIntercepted();
  auto slow_channel = AliceChannel();
  auto fast_channel = AliceChannel();
  std::string slow;
  std::atomic<bool> slow_done{false};
  std::thread slow_caller([&] {
    slow = Echo(slow_channel.get(), "slow-A");
    slow_done.store(true);
  });
  ASSERT_TRUE(WaitForInFlight(1));
  EXPECT_EQ("ok alice", Echo(fast_channel.get(), "fast"));
  EXPECT_FALSE(slow_done.load()) << "the fast call waited for the slow interceptor";
  gate_.Open();
  slow_caller.join();
  EXPECT_EQ("ok alice", slow);  // it went on once its interceptor returned
}

TEST_P(InterceptorTest, ClientInterceptorsAddACredentialAndSeeTheOutcome) {
  StartIntercepted();
  ChannelOptions options;
  options.max_retry = 0;
  options.timeout_ms = 10000;
  options.interceptors = {std::make_shared<ClientSide>("c1", &log_),
                          std::make_shared<ClientSide>("c2", &log_, "token-bob")};
  auto channel = MakeChannel(options);
  // No ChannelOptions::auth: c2's credential is what the server's Authenticator verifies.
  EXPECT_EQ("ok bob", Echo(channel.get(), "hi"));
  EXPECT_EQ("c1.before:Echo c2.before:Echo A:Echo:bob:- B:Echo:bob:- c2.after=0:bob c1.after=0:bob",
            log_.Take());
  // A server refusal: AfterReceive sees the error.
  EXPECT_NE(std::string::npos, Echo(channel.get(), "refuse-A").find("A says no"));
  EXPECT_EQ("c1.before:Echo c2.before:Echo A:Echo:bob:- c2.after=1: c1.after=1:", log_.Take());
  // The user fields BeforeSend added reach the server's interceptors.
  const std::string fields = Echo(channel.get(), "fields-B");
  EXPECT_NE(std::string::npos, fields.find("fields: x-c1=1 x-c2=1")) << fields;
  log_.Take();

  // A refusal before send: nothing is sent, the rest of the chain does not run, AfterReceive does.
  options.interceptors = {std::make_shared<ClientSide>("r", &log_, "", /*refuse=*/true),
                          std::make_shared<ClientSide>("never", &log_)};
  auto refusing = MakeChannel(options);
  const uint64_t calls = server_->GetMethodStats("arenarpc.e2e.TestService.Echo").calls;
  const std::string refused = Echo(refusing.get(), "hi");
  EXPECT_EQ(0u, refused.rfind("[1] [E1]r refuses to send", 0)) << refused;
  EXPECT_EQ("r.before:Echo never.after=1: r.after=1:", log_.Take());
  EXPECT_EQ(calls, server_->GetMethodStats("arenarpc.e2e.TestService.Echo").calls);
  EXPECT_EQ(1u, refusing->stats().failed_calls);

  // Asynchronous calls from several threads: AfterReceive runs before each done.
  options.interceptors = {std::make_shared<ClientSide>("c", &log_, "token-alice")};
  auto async_channel = MakeChannel(options);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10 * kLoadScale; ++i) {
        TestService_Stub stub(async_channel.get());
        Controller controller;
        TestRequest request;
        request.set_message("async");
        TestResponse response;
        stub.Echo(&controller, &request, &response, DoNothing());
        Join(controller.call_id());
        if (!controller.Failed() && response.auth_user() == "alice") ok.fetch_add(1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(4 * 10 * kLoadScale, ok.load());
  const std::string seen = log_.Take();
  size_t afters = 0;
  for (size_t at = seen.find("c.after=0:alice"); at != std::string::npos;
       at = seen.find("c.after=0:alice", at + 1)) {
    ++afters;
  }
  EXPECT_EQ(static_cast<size_t>(4 * 10 * kLoadScale), afters);
}

TEST_P(InterceptorTest, ANullInterceptorIsRefusedAtStartAndInit) {
  ServerOptions options;
  options.interceptors = {nullptr};
  TestServiceImpl service;
  Server server;
  ASSERT_EQ(0, server.AddService(&service, SERVER_DOESNT_OWN_SERVICE));
  EXPECT_EQ(-1, server.Start("127.0.0.1:0", options));
  EXPECT_NE(std::string::npos, server.last_error().find("null interceptor")) << server.last_error();
  ChannelOptions channel_options;
  channel_options.interceptors = {std::make_shared<ClientSide>("c", &log_), nullptr};
  Channel channel;
  EXPECT_EQ(-1, channel.Init("127.0.0.1:1", &channel_options));
  EXPECT_NE(std::string::npos, channel.last_error().find("null interceptor"))
      << channel.last_error();
}

INSTANTIATE_TEST_SUITE_P(Arena, InterceptorTest, ::testing::Values("arena"),
                         ::arenarpc::e2e::ModeName);

}  // namespace
}  // namespace arenarpc::e2e
