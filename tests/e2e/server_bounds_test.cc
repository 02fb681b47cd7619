// The server's bounds against hostile clients (docs/server.md, "Backpressure and the memory
// bound"), each with a good client on another connection that keeps 0 errors: an HTTP chunk-
// extension flood, pipelined pages never read, HTTP replies held for their turn, large frames
// streamed back to back; and the server's own failure paths: a write that fails while replies
// are delivered, Stop() from a worker thread, Start() failing after it bound its ports.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "../free_port.h"
#include "http_client.h"
#include "load_support.h"
#include "process_rss.h"
#include "server_fixture.h"

namespace arenarpc::e2e {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

class ServerBoundsTest : public ServerTest {
 protected:
  void ExpectGoodClientUnharmed(GoodClient& good) {
    good.Stop();
    EXPECT_EQ(0, good.failures()) << good.last_error();
    EXPECT_GT(good.calls(), 0);
  }
};
INSTANTIATE_TEST_SUITE_P(Heap, ServerBoundsTest, ::testing::Values("heap"), ModeName);

// Sends `bytes` over and over until the server closes the connection, `max_bytes` were taken or
// the server stopped taking bytes for `stall`. Returns the bytes the kernel took; *closed says
// whether the server closed. `read_replies` false: a client that never reads what comes back.
size_t Flood(RawSocket& socket, std::string_view prefix, std::string_view bytes,
             size_t max_bytes, milliseconds stall, bool* closed, bool read_replies = true) {
  size_t sent = 0, offset = 0;
  std::string_view pending = prefix;
  auto last_progress = Clock::now();
  *closed = false;
  while (sent < max_bytes && Clock::now() - last_progress < stall) {
    if (pending.empty()) pending = bytes.substr(offset);
    const ssize_t n = socket.TrySend(pending);
    if (n < 0 || (read_replies ? socket.PeerClosed() : socket.PeerClosedWithoutReading())) {
      *closed = true;
      break;
    }
    if (n == 0) {
      std::this_thread::sleep_for(milliseconds(5));
      continue;
    }
    sent += static_cast<size_t>(n);
    if (pending.data() != prefix.data()) offset = (offset + static_cast<size_t>(n)) % bytes.size();
    pending.remove_prefix(static_cast<size_t>(n));
    last_progress = Clock::now();
  }
  return sent;
}

// One body byte per 60 KB chunk extension: max_body_size never trips, yet the request's raw bytes
// are bounded by max_http_header_size + max_body_size + 64 KiB: 413 and close, nothing held.
TEST_P(ServerBoundsTest, ChunkExtensionFloodIsClosedAtTheRawRequestBound) {
  ServerOptions options;
  options.max_body_size = 1u << 20;
  StartServer(options);
  auto good = StartGoodClient();
  const uint64_t rss_before = RssBytes();

  RawSocket hostile(port_);
  ASSERT_TRUE(hostile.ok());
  const std::string head =
      "POST /arenarpc.e2e.TestService/Echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string chunk = "1;" + std::string(60u << 10, 'e') + "\r\nX\r\n";
  bool closed = false;
  const size_t sent = Flood(hostile, head, chunk, 64u << 20, milliseconds(3000), &closed);
  EXPECT_TRUE(closed) << "sent " << sent << " bytes of one request";
  const size_t bound = options.max_http_header_size + options.max_body_size + (64u << 10);
  // What the kernel's socket buffers took after the server stopped reading comes on top.
  EXPECT_LT(sent, bound + (16u << 20));
  // Counted by the reading thread, which may still be on its way when the close arrives.
  for (int i = 0; i < 200 && server_->GetServerStats().malformed_frames == 0; ++i) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ(1u, server_->GetServerStats().malformed_frames);
  if (kMeasuresRss) {
    EXPECT_LT(RssBytes(), rss_before + (32u << 20));
  }
  ExpectGoodClientUnharmed(*good);
}

// Pipelined GET /metrics whose replies are never read: pages are admitted like calls, so the
// connection's backlog, its held replies and max_unwritten_bytes bound what they make the server
// hold, and reading pauses.
TEST_P(ServerBoundsTest, PipelinedPagesNeverReadStayBounded) {
  ServerOptions options;
  options.max_unwritten_bytes = 1u << 20;
  options.max_queued_requests_per_connection = 16;
  StartServer(options);
  size_t page_bytes = 0;
  {
    HttpClient client(port_);
    ASSERT_TRUE(client.Send(HttpClient::Request("GET", "/metrics")));
    std::optional<HttpResponse> page = client.Read();
    ASSERT_TRUE(page);
    ASSERT_EQ(200, page->status);
    page_bytes = page->body.size() + 256;
  }
  auto good = StartGoodClient();
  const uint64_t rss_before = RssBytes();

  std::string batch;
  for (int i = 0; i < 1000; ++i) batch += "GET /metrics HTTP/1.1\r\nHost: h\r\n\r\n";
  RawSocket hostile(port_, /*receive_buffer=*/4096);
  ASSERT_TRUE(hostile.ok());
  bool closed = false;
  const size_t sent =
      Flood(hostile, {}, batch, 32u << 20, milliseconds(1500), &closed, /*read_replies=*/false);
  EXPECT_FALSE(closed);
  EXPECT_LT(sent, 32u << 20) << "the server kept reading a connection whose replies pile up";
  const ServerStats stats = server_->GetServerStats();
  EXPECT_GE(stats.read_pauses, 1u);
  // max_unwritten_bytes, the pages admitted before reading paused (the backlog: 16, plus one per
  // thread), and the 503s answered to requests already read then (under 4 x 2 MiB).
  EXPECT_LE(stats.unwritten_held_bytes, options.max_unwritten_bytes + 18 * page_bytes + (8u << 20))
      << "page of " << page_bytes << " bytes";
  if (kMeasuresRss) {
    EXPECT_LT(RssBytes(), rss_before + (64u << 20));
  }
  ExpectGoodClientUnharmed(*good);
}

TEST_P(ServerBoundsTest, PagesAreAdmittedLikeCalls) {
  ServerOptions options;
  options.max_concurrency = 1;
  StartServer(options);
  HttpClient slow(port_);
  ASSERT_TRUE(slow.Send(HttpClient::Request("POST", "/arenarpc.e2e.TestService/Echo",
                                            R"({"message":"slow","delay_ms":500})")));
  ASSERT_TRUE(WaitForInFlight(1));
  HttpClient pages(port_);
  ASSERT_TRUE(pages.Send(HttpClient::Request("GET", "/health")));
  std::optional<HttpResponse> rejected = pages.Read();
  ASSERT_TRUE(rejected);
  EXPECT_EQ(503, rejected->status) << rejected->body;
  EXPECT_EQ(std::to_string(ELIMIT), rejected->Header("x-bd-error-code"));
  std::optional<HttpResponse> first = slow.Read();
  ASSERT_TRUE(first);
  EXPECT_EQ(200, first->status);
  // The call leaves admission just after its reply was queued.
  for (int i = 0; i < 500 && server_->GetServerStats().in_flight != 0; ++i) {
    std::this_thread::sleep_for(milliseconds(2));
  }
  ASSERT_TRUE(pages.Send(HttpClient::Request("GET", "/health")));
  std::optional<HttpResponse> served = pages.Read();
  ASSERT_TRUE(served);
  EXPECT_EQ(200, served->status);
}

// Replies waiting behind a slow call count in max_unwritten_bytes by their bytes: with 100 KB
// replies and 512 KiB, a handful are produced and held, then reading pauses until the slow call
// is done; everything is answered in order afterwards.
TEST_P(ServerBoundsTest, HeldHttpRepliesCountInMaxUnwrittenBytes) {
  ServerOptions options;
  options.max_unwritten_bytes = 512u << 10;
  StartServer(options);
  HttpClient client(port_);
  ASSERT_TRUE(client.Send(HttpClient::Request("POST", "/arenarpc.e2e.TestService/Echo",
                                              R"({"message":"slow","delay_ms":3000})")));
  ASSERT_TRUE(WaitForInFlight(1));
  constexpr int kLarge = 40;
  auto produced_now = [&] { return server_->GetMethodStats("arenarpc.e2e.TestService.Echo").calls; };
  // One request at a time while replies are produced; once one is not (reading paused), the rest.
  bool paused = false;
  for (int i = 0; i < kLarge; ++i) {
    ASSERT_TRUE(client.Send(HttpClient::Request(
        "POST", "/arenarpc.e2e.TestService/Echo", R"({"message":"x","response_bytes":100000})")));
    for (int wait = 0; !paused && produced_now() < static_cast<uint64_t>(i + 1); ++wait) {
      paused = wait == 100;
      std::this_thread::sleep_for(milliseconds(5));
    }
  }
  std::this_thread::sleep_for(milliseconds(100));
  const uint64_t produced = produced_now();
  EXPECT_TRUE(paused);
  // 512 KiB hold 5 of them (13 I/O pages each); reading pauses before the next is decoded.
  EXPECT_LE(produced, 6u) << "replies held for their turn are not bounded in bytes";
  std::optional<HttpResponse> first = client.Read();
  ASSERT_TRUE(first);
  EXPECT_NE(std::string::npos, first->body.find("slow"));
  // The held replies are 200; requests read while those are still being written may be
  // answered EOVERCROWDED (max_unwritten_bytes), in their turn.
  for (int i = 0; i < kLarge; ++i) {
    std::optional<HttpResponse> reply = client.Read();
    ASSERT_TRUE(reply) << i;
    if (static_cast<uint64_t>(i) < produced || reply->status == 200) {
      ASSERT_EQ(200, reply->status) << i << ": " << reply->body;
      EXPECT_GT(reply->body.size(), 100000u);
    } else {
      ASSERT_EQ(std::to_string(EOVERCROWDED), reply->Header("x-bd-error-code")) << i;
    }
  }
}

// A write that fails while HTTP replies are delivered closes the connection, whose cancel
// callbacks finish another call of the same connection on the same thread: its reply is
// delivered again, reentrantly. No deadlock; the connection goes.
TEST_P(ServerBoundsTest, AWriteFailureWhileDeliveringDoesNotDeadlock) {
  ServerOptions options;
  options.max_queued_requests_per_connection = 2;  // both held: reading pauses, the reset unseen
  StartServer(options);
  HttpClient client(port_);
  ASSERT_TRUE(client.Send(
      HttpClient::Request("POST", "/arenarpc.e2e.TestService/Echo",
                          R"({"message":"a","block_ms":800})") +
      HttpClient::Request("POST", "/arenarpc.e2e.TestService/Echo",
                          R"({"message":"b","reply_on_cancel":true})")));
  ASSERT_TRUE(WaitForInFlight(2));
  client.Reset();
  bool closed = false;
  for (int i = 0; i < 500 && !closed; ++i) {
    closed = server_->GetServerStats().connections_open == 0;
    if (!closed) std::this_thread::sleep_for(milliseconds(10));
  }
  if (!closed) {
    // A thread of the server is stuck on its own lock: the server cannot be stopped.
    std::fprintf(stderr, "the connection never closed: a thread deadlocked in Deliver\n");
    std::fflush(stderr);
    std::_Exit(1);
  }
  for (int i = 0; i < 200 && server_->GetServerStats().in_flight != 0; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(0u, server_->GetServerStats().in_flight);
}

// The read timeout runs per frame: a client streaming large frames back to back, each well
// within read_timeout but the stream far longer, and never an empty buffer in between, is
// served, not closed.
TEST_P(ServerBoundsTest, StreamingLargeFramesOutlastsTheReadTimeout) {
  ServerOptions options;
  options.read_timeout = std::chrono::milliseconds(1000);
  StartServer(options);
  TestRequest request;
  request.set_message(std::string(200u << 10, 'm'));
  request.set_response_bytes(1);
  constexpr int kFrames = 10;
  std::string stream;
  for (int i = 0; i < kFrames; ++i) stream += RawClient::Encode(RequestFor(&request), i + 1);
  const size_t frame = stream.size() / kFrames;
  const size_t piece = frame / 2 + 7;  // never ends on a frame boundary
  RawSocket client(port_);
  ASSERT_TRUE(client.ok());
  const auto start = Clock::now();
  for (size_t offset = 0; offset < stream.size();) {
    const ssize_t n =
        client.TrySend(std::string_view(stream).substr(offset, std::min(piece, stream.size() - offset)));
    ASSERT_GE(n, 0) << "closed after " << offset << " bytes";
    offset += static_cast<size_t>(n);
    if (n > 0 && offset % piece == 0) std::this_thread::sleep_for(milliseconds(150));
    if (n == 0) std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_GT(Clock::now() - start, milliseconds(2 * options.read_timeout));
  for (int i = 0; i < 300 && server_->GetMethodStats("arenarpc.e2e.TestService.Echo").calls <
                                 static_cast<uint64_t>(kFrames);
       ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(static_cast<uint64_t>(kFrames),
            server_->GetMethodStats("arenarpc.e2e.TestService.Echo").calls);
  EXPECT_EQ(0u, server_->GetServerStats().connections_closed_read_timeout);
  EXPECT_FALSE(client.PeerClosed());
}

// A client that sends requests with large replies and never reads them is closed once its
// replies found no room in its socket for write_timeout.
TEST_P(ServerBoundsTest, NeverReadingClientIsClosedByTheWriteTimeout) {
  ServerOptions options;
  options.write_timeout = std::chrono::milliseconds(300);
  StartServer(options);
  auto good = StartGoodClient();
  TestRequest request;
  request.set_message("big reply");
  request.set_response_bytes(1 << 20);
  std::string batch;
  for (int i = 0; i < 16; ++i) batch += RawClient::Encode(RequestFor(&request), i + 1);
  RawSocket hostile(port_, /*receive_buffer=*/4096);
  ASSERT_TRUE(hostile.ok());
  for (std::string_view rest = batch; !rest.empty();) {
    const ssize_t n = hostile.TrySend(rest);
    ASSERT_GE(n, 0);
    rest.remove_prefix(static_cast<size_t>(n));
    if (n == 0) std::this_thread::sleep_for(milliseconds(5));
  }
  bool closed = false;
  for (int i = 0; i < 500 && !closed; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
    closed = server_->GetServerStats().connections_closed_write_timeout == 1;
  }
  EXPECT_TRUE(closed);
  // What the kernel had taken still arrives before the end of the stream.
  bool peer_closed = false;
  for (int i = 0; i < 500 && !peer_closed; ++i) {
    peer_closed = hostile.PeerClosed();
    if (!peer_closed) std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_TRUE(peer_closed);
  ExpectGoodClientUnharmed(*good);
}

TEST_P(ServerBoundsTest, SilentConnectionIsClosedByTheFirstByteTimeout) {
  ServerOptions options;
  options.first_byte_timeout = std::chrono::milliseconds(200);
  StartServer(options);
  auto good = StartGoodClient();  // sends at once: not affected
  RawSocket silent(port_);
  ASSERT_TRUE(silent.ok());
  bool closed = false;
  for (int i = 0; i < 300 && !closed; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
    closed = silent.PeerClosed();
  }
  EXPECT_TRUE(closed);
  EXPECT_EQ(1u, server_->GetServerStats().connections_closed_first_byte_timeout);
  ExpectGoodClientUnharmed(*good);
}

// The defaults bound the number of connections and the time a connection may hold the server
// without sending or reading (docs/server.md states the process-wide bound they give).
TEST(ServerDefaultsTest, DefaultsBoundConnectionsAndSilentOrNonReadingClients) {
  const ServerOptions defaults;
  EXPECT_GT(defaults.max_connections, 0);
  EXPECT_GT(defaults.first_byte_timeout.count(), 0);
  EXPECT_GT(defaults.write_timeout.count(), 0);
  EXPECT_GT(defaults.read_timeout.count(), 0);
}

// A service whose handler stops its own server.
class StoppingService final : public TestService {
 public:
  void Echo(google::protobuf::RpcController*, const TestRequest* request, TestResponse* response,
            google::protobuf::Closure* done) override {
    const auto start = Clock::now();
    stop_result = server->Stop();
    stop_took = Clock::now() - start;
    response->set_message(request->message());
    done->Run();
  }
  Server* server = nullptr;
  std::atomic<int> stop_result{1};
  Clock::duration stop_took{};
};

TEST(ServerLifecycleBoundsTest, StopFromAWorkerThreadHandlerFailsAtOnce) {
  StoppingService service;
  Server server;
  service.server = &server;
  ASSERT_EQ(0, server.AddService(&service, SERVER_DOESNT_OWN_SERVICE));
  ServerOptions options;
  options.num_threads = 1;
  options.worker_threads = 1;
  options.stop_deadline = std::chrono::milliseconds(3000);
  ASSERT_EQ(0, server.Start("127.0.0.1:0", options)) << server.last_error();
  Channel channel;
  ChannelOptions channel_options;
  channel_options.timeout_ms = 10000;
  ASSERT_EQ(0, channel.Init("127.0.0.1:" + std::to_string(server.listen_port()), &channel_options));
  EXPECT_EQ("", CallEcho(&channel, "stop"));
  EXPECT_EQ(-1, service.stop_result.load());
  EXPECT_LT(service.stop_took, milliseconds(1000));
  EXPECT_NE(std::string::npos, server.last_error().find("Stop")) << server.last_error();
  EXPECT_EQ(0, server.Stop());
}


bool CanListenOn(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                  ::listen(fd, 1) == 0;
  ::close(fd);
  return ok;
}

TEST(ServerLifecycleBoundsTest, StartFailingAfterBindingReleasesEveryPort) {
  TestServiceImpl service;
  const int internal = arenarpc::testing::FreePort();
  ASSERT_GT(internal, 0);
  {
    Server server;
    ASSERT_EQ(0, server.AddService(&service, SERVER_DOESNT_OWN_SERVICE));
    ServerOptions options;
    options.num_threads = 1;
    options.internal_port = internal;
    options.registry_url = "nosuch://127.0.0.1:1/arenarpc";  // fails after the ports are bound
    EXPECT_EQ(-1, server.Start("127.0.0.1:0", options));
    EXPECT_NE(std::string::npos, server.last_error().find("registry_url")) << server.last_error();
    EXPECT_EQ(-1, server.listen_port());
    EXPECT_TRUE(CanListenOn(internal)) << "internal_port " << internal << " is still bound";
  }
}

}  // namespace
}  // namespace arenarpc::e2e
