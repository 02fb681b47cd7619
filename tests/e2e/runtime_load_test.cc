// The runtime under hostile or heavy load: a client that never reads its replies, slow senders,
// a multiplexed connection behind a blocking call, a graceful stop during a large reply, and a
// compressed request that would inflate past max_body_size. Good clients keep 0 errors meanwhile.

#include <atomic>
#include <chrono>
#include <latch>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "load_support.h"
#include "process_rss.h"
#include "protocol/compression.h"
#include "server_fixture.h"

namespace arenarpc::e2e {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

class RuntimeLoadTest : public ServerTest {};
INSTANTIATE_TEST_SUITE_P(Modes, RuntimeLoadTest, ::testing::Values("heap", "reuse"), ModeName);

TEST_P(RuntimeLoadTest, NeverReadingClientIsHeldToMaxUnwrittenBytes) {
  ServerOptions options;
  options.max_unwritten_bytes = 1u << 20;
  StartServer(options);
  auto good = StartGoodClient();
  const uint64_t rss_before = RssBytes();

  // Pipelined tiny requests, replies never read. Unbounded, the server would queue a reply per
  // request: 32 MiB of 52-byte requests would hold gigabytes.
  TestRequest tiny;
  tiny.set_message("x");
  std::string batch;
  for (int i = 0; i < 1000; ++i) batch += RawClient::Encode(RequestFor(&tiny), i + 1);
  constexpr size_t kMaxSend = 32u << 20;
  RawSocket hostile(port_, /*receive_buffer=*/4096);
  ASSERT_TRUE(hostile.ok());
  size_t sent = 0, offset = 0;
  auto last_progress = Clock::now();
  while (sent < kMaxSend && Clock::now() - last_progress < milliseconds(1500)) {
    const ssize_t n = hostile.TrySend(std::string_view(batch).substr(offset));
    ASSERT_GE(n, 0) << "the server closed the connection instead of pausing it";
    if (n == 0) {
      std::this_thread::sleep_for(milliseconds(5));
      continue;
    }
    sent += static_cast<size_t>(n);
    offset = (offset + static_cast<size_t>(n)) % batch.size();
    last_progress = Clock::now();
  }
  const ServerStats stats = server_->GetServerStats();
  EXPECT_LT(sent, kMaxSend) << "the server kept reading a connection whose replies pile up";
  EXPECT_GE(stats.read_pauses, 1u);
  // The bound (docs/server.md): max_unwritten_bytes plus the replies to the requests read before
  // reading paused — EOVERCROWDED ones for these tiny requests, ~1.4x their bytes, of at most one
  // wakeup's reads (2 MiB).
  EXPECT_LE(stats.unwritten_held_bytes, options.max_unwritten_bytes + (4u << 20));
  if (kMeasuresRss) {
    EXPECT_LT(RssBytes(), rss_before + (64u << 20));
  }

  good->Stop();
  EXPECT_EQ(0, good->failures()) << good->last_error();
  EXPECT_GT(good->calls(), 0);
}

TEST_P(RuntimeLoadTest, SlowSendersAreClosedAfterTheReadTimeout) {
  ServerOptions options;
  options.read_timeout = std::chrono::milliseconds(300);
  StartServer(options);
  auto good = StartGoodClient();

  TestRequest request;
  request.set_message("trickle");
  const std::string frame = RawClient::Encode(RequestFor(&request), 1);
  constexpr int kSenders = 10;
  std::vector<std::unique_ptr<RawSocket>> senders;
  for (int i = 0; i < kSenders; ++i) {
    senders.push_back(std::make_unique<RawSocket>(port_));
    ASSERT_TRUE(senders.back()->ok());
  }
  // One byte every 50 ms per connection: the frame would take seconds to complete.
  std::vector<bool> closed(kSenders, false);
  int closed_count = 0;
  const auto start = Clock::now();
  for (size_t byte = 0; closed_count < kSenders && Clock::now() - start < std::chrono::seconds(10);
       ++byte) {
    for (int i = 0; i < kSenders; ++i) {
      if (closed[i]) continue;
      if (senders[i]->PeerClosed() || senders[i]->TrySend(frame.substr(byte % frame.size(), 1)) < 0) {
        closed[i] = true;
        ++closed_count;
      }
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_EQ(kSenders, closed_count);
  EXPECT_GE(Clock::now() - start, milliseconds(300));
  EXPECT_EQ(static_cast<uint64_t>(kSenders),
            StatSoon(&ServerStats::connections_closed_read_timeout, kSenders));
  good->Stop();
  EXPECT_EQ(0, good->failures()) << good->last_error();
}

TEST_P(RuntimeLoadTest, BlockingCallDoesNotHoldUpItsConnection) {
  ServerOptions options;
  options.num_threads = 2;
  StartServer(options);
  auto channel = MakeChannel();  // one connection, calls multiplexed on it
  TestService_Stub stub(channel.get());

  constexpr int kFast = 100;
  const int block_ms = 200 * (kLoadScale == 1 ? 5 : 1);  // sanitizers: more room for the fast ones
  struct Progress {
    std::atomic<int> fast_done{0};
    std::atomic<int> fast_done_when_slow_finished{-1};
    std::latch all_done{kFast + 1};
  } progress;
  struct Call {
    Controller controller;
    TestRequest request;
    TestResponse response;
  };
  std::vector<Call> calls(kFast + 1);
  calls[0].request.set_message("slow");
  calls[0].request.set_block_ms(block_ms);
  stub.Echo(&calls[0].controller, &calls[0].request, &calls[0].response,
            google::protobuf::NewCallback(+[](Progress* p) {
              p->fast_done_when_slow_finished.store(p->fast_done.load());
              p->all_done.count_down();
            }, &progress));
  for (int i = 1; i <= kFast; ++i) {
    calls[i].request.set_message("fast-" + std::to_string(i));
    stub.Echo(&calls[i].controller, &calls[i].request, &calls[i].response,
              google::protobuf::NewCallback(+[](Progress* p) {
                p->fast_done.fetch_add(1);
                p->all_done.count_down();
              }, &progress));
  }
  progress.all_done.wait();
  for (const Call& call : calls) {
    ASSERT_FALSE(call.controller.Failed()) << call.controller.ErrorText();
    EXPECT_EQ(call.request.message(), call.response.message());
  }
  EXPECT_EQ(kFast, progress.fast_done_when_slow_finished.load())
      << "fast calls waited behind the blocking one on their shared connection";
  ExpectAllPairsReleased();
}

// A read that leaves room in its buffer is taken to have emptied the socket (no second read that
// could only return EAGAIN): bytes arriving after it, in pieces or after a reply, are still read.
TEST_P(RuntimeLoadTest, BytesArrivingAfterAShortReadAreRead) {
  StartServer(ServerOptions{});
  RawClient client(port_);
  ASSERT_TRUE(client.connected());
  const auto echoes = [&](const std::string& message) -> ::testing::AssertionResult {
    RawReply reply;
    if (!client.Read(&reply, std::chrono::seconds(10))) {
      return ::testing::AssertionFailure() << "no reply to a " << message.size() << "-byte message";
    }
    TestResponse response;
    if (auto parsed = ParseReply(reply, &response); !parsed) return parsed;
    if (response.message() != message) {
      return ::testing::AssertionFailure() << "echo of " << response.message().size() << " bytes, "
                                           << message.size() << " sent: " << response.message().substr(0, 40);
    }
    return ::testing::AssertionSuccess();
  };
  TestRequest request;
  request.set_message("in pieces");
  const std::string frame = RawClient::Encode(RequestFor(&request), 1);
  for (size_t at = 0; at < frame.size(); at += 7) {  // each piece a short read of its own
    client.SendBytes(std::string_view(frame).substr(at, 7));
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(echoes("in pieces"));
  for (int i = 0; i < 3; ++i) {  // the next request only after the reply and a pause
    std::this_thread::sleep_for(milliseconds(30));
    request.set_message("later " + std::to_string(i));
    client.SendBytes(RawClient::Encode(RequestFor(&request), 2 + i));
    EXPECT_TRUE(echoes(request.message()));
  }
  // Reads that fill their buffer: a 3 MiB request in one write, then a small one behind it
  // (replies come as the calls finish: matched by correlation id).
  TestRequest big;
  big.set_message(std::string(3u << 20, 'b'));
  request.set_message("behind the big one");
  client.SendBytes(RawClient::Encode(RequestFor(&big), 10) +
                   RawClient::Encode(RequestFor(&request), 11));
  std::map<int64_t, size_t> echoed;
  for (int i = 0; i < 2; ++i) {
    RawReply reply;
    ASSERT_TRUE(client.Read(&reply, std::chrono::seconds(10)));
    TestResponse response;
    ASSERT_TRUE(ParseReply(reply, &response));
    echoed[reply.correlation_id] = response.message().size();
  }
  EXPECT_EQ((std::map<int64_t, size_t>{{10, big.message().size()}, {11, request.message().size()}}),
            echoed);
}

TEST_P(RuntimeLoadTest, StopWritesAReplyThatIsStillBeingSent) {
  ServerOptions options;
  options.stop_deadline = std::chrono::milliseconds(30000);
  StartServer(options);
  constexpr int kReplyBytes = 32 << 20;
  RawClient client(port_);
  ASSERT_TRUE(client.connected());
  TestRequest request;
  request.set_message("big");
  request.set_response_bytes(kReplyBytes);
  client.Send(RequestFor(&request));
  // The reply is produced and queued: far more than the socket buffers take.
  for (int i = 0; i < 2000 && server_->GetMethodStats("arenarpc.e2e.TestService.Echo").calls == 0;
       ++i) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  ASSERT_EQ(1u, server_->GetMethodStats("arenarpc.e2e.TestService.Echo").calls);
  std::atomic<int> stop_result{-2};
  std::thread stopper([&] { stop_result.store(server_->Stop()); });
  // Stop() has begun before we read a byte: it closes the listener first, so wait until a new
  // connection is refused.
  bool refused = false;
  for (const auto until = Clock::now() + std::chrono::seconds(10); !refused && Clock::now() < until;) {
    refused = !RawClient(port_).connected();
    if (!refused) std::this_thread::sleep_for(milliseconds(2));
  }
  EXPECT_TRUE(refused) << "Stop() did not close the listener";
  RawReply reply;
  ASSERT_TRUE(client.Read(&reply, std::chrono::seconds(30)));
  EXPECT_EQ(0, reply.error_code) << reply.error_text;
  TestResponse response;
  ASSERT_TRUE(ParseReply(reply, &response));
  EXPECT_EQ(static_cast<size_t>(kReplyBytes), response.message().size());
  EXPECT_TRUE(client.WaitForClose());
  stopper.join();
  EXPECT_EQ(0, stop_result.load());
}

TEST_P(RuntimeLoadTest, CompressedRequestInflatingPastMaxBodySizeIsRejected) {
  ServerOptions options;
  options.max_body_size = 1u << 20;
  StartServer(options);
  auto good = StartGoodClient();

  // gzip of a request whose serialized size is `plain_size` (a ~1000x shrink).
  auto gzipped = [](size_t plain_size) {
    TestRequest request;
    request.set_message(std::string(plain_size - 8, 'a'));  // tag + 4..5 byte length prefix
    while (request.ByteSizeLong() < plain_size) request.mutable_message()->push_back('a');
    while (request.ByteSizeLong() > plain_size) request.mutable_message()->pop_back();
    EXPECT_EQ(plain_size, request.ByteSizeLong());
    net::BufferChain plain, compressed;
    plain.Append(request.SerializeAsString());
    std::string error;
    EXPECT_TRUE(protocol::Compress(2, plain, &compressed, &error)) << error;
    RawRequest raw;
    raw.raw_payload = compressed.ToString();
    raw.compress_type = 2;
    return raw;
  };
  RawClient client(port_);
  // The cap is max_body_size, inclusive (decompression_bound_test shows inflation stops there).
  RawReply fits = client.Call(gzipped(options.max_body_size));
  EXPECT_EQ(0, fits.error_code) << fits.error_text;
  RawReply over = client.Call(gzipped(options.max_body_size + 1));
  EXPECT_EQ(EREQUEST, over.error_code) << over.error_text;
  const RawRequest bomb = gzipped(32u << 20);
  ASSERT_LT(bomb.raw_payload->size(), options.max_body_size);
  RawReply reply = client.Call(bomb);
  EXPECT_EQ(EREQUEST, reply.error_code) << reply.error_text;
  EXPECT_NE(std::string::npos, reply.error_text.find("CompressType=gzip")) << reply.error_text;
  // The connection stays usable.
  TestRequest normal;
  normal.set_message("after the bomb");
  RawReply after = client.Call(RequestFor(&normal));
  EXPECT_EQ(0, after.error_code) << after.error_text;
  good->Stop();
  EXPECT_EQ(0, good->failures()) << good->last_error();
}

TEST_P(RuntimeLoadTest, QueuedCallsOfAClosedConnectionAreDropped) {
  ServerOptions options;
  options.num_threads = 1;
  StartServer(options);
  constexpr int kCalls = 50;
  {
    RawClient client(port_);
    TestRequest request;
    request.set_message("queued");
    request.set_block_ms(100);
    std::string burst;
    for (int i = 0; i < kCalls; ++i) burst += RawClient::Encode(RequestFor(&request), i + 1);
    client.SendBytes(burst);
    ASSERT_TRUE(WaitForInFlight(kCalls));
  }  // closed while one call blocks the only thread and the rest wait
  // Run one by one they would take 5 s; dropped, the server is idle after the running one.
  for (int i = 0; i < 300 && server_->GetServerStats().in_flight > 0; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  const ServerStats stats = server_->GetServerStats();
  EXPECT_EQ(0, stats.in_flight);
  EXPECT_EQ(0, stats.queued);
  EXPECT_LT(service_->handler_calls(), kCalls / 2);
  ExpectAllPairsReleased();
}

TEST_P(RuntimeLoadTest, ConnectionsPastMaxConnectionsAreClosed) {
  ServerOptions options;
  options.max_connections = 2;
  StartServer(options);
  RawClient first(port_), second(port_);
  TestRequest request;
  request.set_message("hello");
  EXPECT_EQ(0, first.Call(RequestFor(&request)).error_code);
  EXPECT_EQ(0, second.Call(RequestFor(&request)).error_code);
  RawClient third(port_);  // the kernel accepts it; the server closes it
  EXPECT_TRUE(third.WaitForClose());
  EXPECT_EQ(1u, StatSoon(&ServerStats::connections_rejected, 1));
  EXPECT_EQ(0, first.Call(RequestFor(&request)).error_code);
  first.Close();
  for (int i = 0; i < 500 && server_->GetServerStats().connections_open > 1; ++i) {
    std::this_thread::sleep_for(milliseconds(2));
  }
  RawClient fourth(port_);  // a place is free again
  EXPECT_EQ(0, fourth.Call(RequestFor(&request)).error_code);
}

}  // namespace
}  // namespace arenarpc::e2e
