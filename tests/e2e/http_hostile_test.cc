// Hostile HTTP input on the RPC port: each bad connection gets its 4xx (when it spoke HTTP), is
// closed and counted, while a good baidu_std client on the same server keeps 0 errors. And the
// built-in services' options: has_builtin_services=false, internal_port.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "http_client.h"
#include "process_rss.h"
#include "raw_client.h"
#include "server_fixture.h"

namespace arenarpc::e2e {
namespace {

class HttpHostileTest : public ServerTest {};
INSTANTIATE_TEST_SUITE_P(Modes, HttpHostileTest, ::testing::Values("heap", "reuse", "auto"),
                         ModeName);

TEST_P(HttpHostileTest, BadHttpClosesOnlyItsConnectionAndIsCounted) {
  ServerOptions options;
  options.num_threads = 1;  // issue 39's rows are against a one-I/O-thread server
  options.max_body_size = 64 << 10;
  options.read_timeout = std::chrono::milliseconds(300);
  // Small enough that the stated bound is tight.
  options.max_queued_request_bytes = 1u << 20;
  options.max_unwritten_bytes = 1u << 20;
  options.max_stream_unconsumed_bytes = 1u << 20;
  options.memory.reuse.max_pool_bytes = 8u << 20;
  options.memory_mode = GetParam();
  StartServer(options);
  // A good baidu_std client calls for the whole test: its p99 unattacked, then under attack.
  StartMeasuredGoodClient();

  struct Hostile {
    const char* what;
    std::string bytes;
    int status;  // the answer before the close; 0: closed without one
  };
  const std::vector<Hostile> hostile = {
      {"malformed request line", "GET /x HTTP/9\x01\r\n\r\n", 400},
      {"malformed header", "GET /x HTTP/1.1\r\nBad\x7f: y\r\n\r\n", 400},
      {"100 KiB of headers",
       "GET /health HTTP/1.1\r\n" + std::string(100 << 10, 'h') + ": v\r\n\r\n", 431},
      {"body over max_body_size",
       "POST /arenarpc.e2e.TestService/Echo HTTP/1.1\r\nContent-Length: " +
           std::to_string((64 << 10) + 1) + "\r\n\r\n{",
       413},
      {"chunked body over max_body_size",
       "POST /arenarpc.e2e.TestService/Echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
       "10001\r\n" +
           std::string((64 << 10) + 1, 'x'),
       413},
      {"garbage first bytes", std::string("\x16\x03\x01\x00\xa5garbage", 12), 0},
      {"lower-case method", "get / HTTP/1.1\r\n\r\n", 0},
  };
  uint64_t expected_malformed = 0;
  for (const Hostile& h : hostile) {
    HttpClient client(port_);
    ASSERT_TRUE(client.connected());
    client.Send(h.bytes);  // may fail half-way once the server closed: fine
    if (h.status != 0) {
      std::optional<HttpResponse> response = client.Read();
      ASSERT_TRUE(response) << h.what;
      EXPECT_EQ(h.status, response->status) << h.what;
      EXPECT_EQ("close", response->Header("connection")) << h.what;
    }
    EXPECT_TRUE(client.WaitClosed()) << h.what;
    ++expected_malformed;
    EXPECT_EQ(expected_malformed, StatSoon(&ServerStats::malformed_frames, expected_malformed))
        << h.what;
  }

  // Slowloris: headers that never end are cut by read_timeout.
  {
    HttpClient client(port_);
    ASSERT_TRUE(client.Send("GET /health HTTP/1.1\r\nX-Slow: "));
    for (int i = 0; i < 4; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      client.Send("a");
    }
    EXPECT_TRUE(client.WaitClosed(std::chrono::seconds(5)));
    EXPECT_EQ(1u, StatSoon(&ServerStats::connections_closed_read_timeout, 1));
  }
  // An idle keep-alive connection between requests is no slow sender.
  {
    HttpClient client(port_);
    ASSERT_TRUE(client.Send(HttpClient::Request("GET", "/health")));
    ASSERT_TRUE(client.Read());
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ASSERT_TRUE(client.Send(HttpClient::Request("GET", "/health")));
    std::optional<HttpResponse> response = client.Read();
    ASSERT_TRUE(response);
    EXPECT_EQ(200, response->status);
  }

  // The bound: the good client's connection and one hostile connection (one at a time).
  StopMeasuredGoodClient(BaiduStdConnectionBound(options) + HttpConnectionBound(options) +
                         ProcessCachesBound(options, 2));
  EXPECT_EQ(expected_malformed, StatSoon(&ServerStats::malformed_frames, expected_malformed));
}

// Replies wait for the ones before them: a client pipelining behind a slow call cannot make the
// server hold more than max_queued_requests_per_connection of them; reading pauses meanwhile and
// everything is answered, in order, once the slow call is done.
TEST_P(HttpHostileTest, HeldRepliesAreBoundedPerConnection) {
  ServerOptions options;
  options.max_queued_requests_per_connection = 8;
  StartServer(options);
  HttpClient client(port_);
  std::string batch = HttpClient::Request("POST", "/arenarpc.e2e.TestService/Echo",
                                          R"({"message":"slow","delay_ms":300})");
  constexpr int kPages = 200;
  for (int i = 0; i < kPages; ++i) batch += HttpClient::Request("GET", "/health");
  ASSERT_TRUE(client.Send(batch));
  std::optional<HttpResponse> first = client.Read();
  ASSERT_TRUE(first);
  EXPECT_EQ(200, first->status);
  EXPECT_NE(std::string::npos, first->body.find("slow"));
  EXPECT_GE(server_->GetServerStats().read_pauses, 1u);
  for (int i = 0; i < kPages; ++i) {
    std::optional<HttpResponse> page = client.Read();
    ASSERT_TRUE(page) << i;
    ASSERT_EQ("OK\n", page->body) << i;
  }
  EXPECT_EQ(0u, server_->GetServerStats().malformed_frames);
}

TEST_P(HttpHostileTest, BuiltinServicesCanBeTurnedOff) {
  ServerOptions options;
  options.has_builtin_services = false;
  StartServer(options);
  HttpClient client(port_);
  ASSERT_TRUE(client.Send(
      HttpClient::Request("GET", "/health") + HttpClient::Request("GET", "/") +
      HttpClient::Request("POST", "/arenarpc.e2e.TestService/Echo", R"({"message":"still"})")));
  for (int expected : {404, 404, 200}) {
    std::optional<HttpResponse> response = client.Read();
    ASSERT_TRUE(response);
    EXPECT_EQ(expected, response->status) << response->body;
  }
}

TEST_P(HttpHostileTest, InternalPortServesBuiltinsAndTheMainPortMethods) {
  ServerOptions options;
  options.internal_port = 0;
  StartServer(options);
  const int internal = server_->internal_listen_port();
  ASSERT_GT(internal, 0);
  ASSERT_NE(port_, internal);
  auto get = [](int port, const std::string& request) {
    HttpClient client(port);
    EXPECT_TRUE(client.Send(request));
    std::optional<HttpResponse> response = client.Read();
    return response ? response->status : -1;
  };
  const std::string echo =
      HttpClient::Request("POST", "/arenarpc.e2e.TestService/Echo", R"({"message":"m"})");
  EXPECT_EQ(403, get(port_, HttpClient::Request("GET", "/health")));
  EXPECT_EQ(200, get(internal, HttpClient::Request("GET", "/health")));
  EXPECT_EQ(200, get(internal, HttpClient::Request("GET", "/version")));
  EXPECT_EQ(200, get(port_, echo));
  EXPECT_EQ(404, get(internal, echo));
  // baidu_std and gRPC stay on the main port too: the internal port closes their connections
  // without calling the method.
  auto channel = MakeChannel();
  EXPECT_EQ("", CallEcho(channel.get(), "rpc"));
  TestRequest request;
  request.set_message("internal");
  RawClient baidu_std(internal);
  baidu_std.Send(RequestFor(&request));
  EXPECT_TRUE(baidu_std.WaitForClose());
  RawClient h2(internal);
  h2.SendBytes("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
  EXPECT_TRUE(h2.WaitForClose());
  // Two calls ran, both on the main port (HTTP and baidu_std).
  EXPECT_EQ(2u, server_->GetMethodStats("arenarpc.e2e.TestService.Echo").calls);
}

// main_port_pages: kHealth keeps only /health on the main port, kNone no page; methods stay.
TEST_P(HttpHostileTest, MainPortPagesPolicyLimitsThePages) {
  for (MainPortPages policy : {MainPortPages::kHealth, MainPortPages::kNone}) {
    for (int internal_port : {-1, 0}) {
      ServerOptions options;
      options.main_port_pages = policy;
      options.internal_port = internal_port;
      StartServer(options);
      auto get = [](int port, const std::string& path) {
        HttpClient client(port);
        EXPECT_TRUE(client.Send(HttpClient::Request("GET", path)));
        std::optional<HttpResponse> response = client.Read();
        return response ? response->status : -1;
      };
      const bool health = policy == MainPortPages::kHealth;
      const char* name = health ? "kHealth" : "kNone";
      EXPECT_EQ(health ? 200 : 404, get(port_, "/health")) << name << " " << internal_port;
      for (const char* page : {"/status", "/connections", "/flags", "/vars", "/metrics", "/"}) {
        EXPECT_EQ(404, get(port_, page)) << name << " " << page;
      }
      if (internal_port == 0) {
        EXPECT_EQ(200, get(server_->internal_listen_port(), "/connections"));
      }
      HttpClient client(port_);
      ASSERT_TRUE(client.Send(HttpClient::Request("POST", "/arenarpc.e2e.TestService/Echo",
                                                  R"({"message":"m"})")));
      std::optional<HttpResponse> echo = client.Read();
      ASSERT_TRUE(echo);
      EXPECT_EQ(200, echo->status);
      auto channel = MakeChannel();
      EXPECT_EQ("", CallEcho(channel.get(), "rpc"));
      TearDown();
    }
  }
}

TEST_P(HttpHostileTest, ConnectionsPageShowsEachConnectionsProtocol) {
  StartServer();
  auto channel = MakeChannel();
  ASSERT_EQ("", CallEcho(channel.get(), "rpc"));  // its baidu_std connection stays open
  HttpClient client(port_);
  ASSERT_TRUE(client.Send(HttpClient::Request("GET", "/connections?format=json")));
  std::optional<HttpResponse> page = client.Read();
  ASSERT_TRUE(page);
  ASSERT_EQ(200, page->status);
  EXPECT_NE(std::string::npos, page->body.find(R"("protocol":"baidu_std")")) << page->body;
  EXPECT_NE(std::string::npos, page->body.find(R"("protocol":"http")")) << page->body;
}

// True if a TCP connection to ip:port is accepted.
bool CanConnect(const char* ip, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, ip, &address.sin_addr);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return ok;
}

// internal_port has its own address, loopback by default: a main port on 0.0.0.0 does not make
// the pages public. (Every 127.x.y.z address reaches the loopback interface.)
TEST(HttpOptionsTest, InternalPortListensOnItsOwnAddress) {
  TestServiceImpl service;
  // Starts a server on `address` with internal_port 0 (and `internal_address` unless empty).
  auto start = [&](Server& server, const char* address, const char* internal_address) {
    ASSERT_EQ(0, server.AddService(&service, SERVER_DOESNT_OWN_SERVICE));
    ServerOptions options;
    options.num_threads = 1;
    options.internal_port = 0;
    if (*internal_address != 0) options.internal_address = internal_address;
    ASSERT_EQ(0, server.Start(address, options)) << server.last_error();
  };
  {
    Server server;
    start(server, "0.0.0.0:0", "");
    EXPECT_TRUE(CanConnect("127.0.0.2", server.listen_port()));  // the main port: everywhere
    EXPECT_TRUE(CanConnect("127.0.0.1", server.internal_listen_port()));
    EXPECT_FALSE(CanConnect("127.0.0.2", server.internal_listen_port()));
  }
  {
    Server server;
    start(server, "127.0.0.1:0", "127.0.0.2");
    EXPECT_TRUE(CanConnect("127.0.0.2", server.internal_listen_port()));
    EXPECT_FALSE(CanConnect("127.0.0.1", server.internal_listen_port()));
  }
}

TEST(HttpOptionsTest, BadHttpOptionsFailStartNamingThem) {
  TestServiceImpl service;
  for (auto [set, name] : std::vector<std::pair<void (*)(ServerOptions&), const char*>>{
           {[](ServerOptions& o) { o.max_http_header_size = 0; }, "max_http_header_size"},
           {[](ServerOptions& o) { o.max_http_header_size = 1 << 20; }, "max_http_header_size"},
           {[](ServerOptions& o) { o.internal_port = -2; }, "internal_port"},
           {[](ServerOptions& o) { o.internal_port = 70000; }, "internal_port"},
           {[](ServerOptions& o) { o.main_port_pages = static_cast<MainPortPages>(7); },
            "main_port_pages"},
           {[](ServerOptions& o) {
              o.internal_port = 0;
              o.internal_address = "localhost:1";
            },
            "internal_address"}}) {
    Server server;
    ASSERT_EQ(0, server.AddService(&service, SERVER_DOESNT_OWN_SERVICE));
    ServerOptions options;
    set(options);
    EXPECT_EQ(-1, server.Start("127.0.0.1:0", options));
    EXPECT_NE(std::string::npos, server.last_error().find(name)) << server.last_error();
  }
}

}  // namespace
}  // namespace arenarpc::e2e
