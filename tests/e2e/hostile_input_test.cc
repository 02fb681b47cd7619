// Hostile input: malformed frames on raw sockets close only their own connection, are counted,
// and never disturb the good clients calling at the same time.

#include <atomic>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "protocol/rpc_meta.pb.h"
#include "server_fixture.h"

namespace arenarpc::e2e {
namespace {

class HostileInputTest : public ServerTest {};
ARENARPC_ALL_MODES(HostileInputTest);
INSTANTIATE_TEST_SUITE_P(Auto, HostileInputTest, ::testing::Values("auto"), ModeName);

std::string BigEndian32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

std::string Header(uint32_t body_size, uint32_t meta_size, std::string_view magic = "PRPC") {
  return std::string(magic) + BigEndian32(body_size) + BigEndian32(meta_size);
}

TEST_P(HostileInputTest, MalformedFramesCloseOnlyTheirConnection) {
  ServerOptions options;
  options.num_threads = 1;  // issue 39's rows are against a one-I/O-thread server
  options.max_body_size = 4096;
  // Small enough that the stated bound is tight.
  options.max_queued_request_bytes = 1u << 20;
  options.max_unwritten_bytes = 1u << 20;
  options.max_stream_unconsumed_bytes = 1u << 20;
  options.memory.reuse.max_pool_bytes = 8u << 20;
  options.memory_mode = GetParam();
  StartServer(options);
  // A good client keeps calling for the whole test: its p99 unattacked, then under attack.
  StartMeasuredGoodClient();

  uint64_t expected_malformed = 0;
  auto expect_closed = [&](const std::string& bytes, bool counts, const char* what) {
    RawClient client(port_);
    ASSERT_TRUE(client.connected());
    client.SendBytes(bytes);
    EXPECT_TRUE(client.WaitForClose()) << what;
    if (counts) ++expected_malformed;
  };

  std::mt19937 rng(GetParam()[0]);
  // The attack, again and again (at least kAttackTime): each round's connections one at a time.
  const int rounds = RepeatAttack([&] {
    for (int round = 0; round < 3 * kLoadScale; ++round) {
      // Random bytes (never starting with 'P', so never a valid magic).
      std::string noise(64 + rng() % 512, '\0');
      for (char& ch : noise) ch = static_cast<char>(rng());
      noise[0] = static_cast<char>('Q' + rng() % 8);
      expect_closed(noise, true, "random bytes");
    }
    expect_closed("XRPC" + BigEndian32(10) + BigEndian32(5) + std::string(10, 'a'), true,
                  "bad magic");
    expect_closed(Header(4097, 10), true, "body_size over max_body_size (header only)");
    expect_closed(Header(0xFFFFFFFFu, 10), true, "body_size 4 GiB");
    expect_closed(Header(10, 11) + std::string(10, 'm'), true, "meta_size > body_size");
    expect_closed(Header(6, 6) + std::string("\xff\xff\xff\xff\xff\xff", 6), true,
                  "undecodable meta");
    {
      protocol::RpcMeta meta;  // `request` without its required method_name
      meta.mutable_request()->set_service_name("arenarpc.e2e.TestService");
      const std::string bytes = meta.SerializePartialAsString();
      expect_closed(
          Header(static_cast<uint32_t>(bytes.size()), static_cast<uint32_t>(bytes.size())) + bytes,
          true, "meta missing a required field");
    }
    {
      // A good request, then garbage on the same connection: the request is answered first.
      RawClient client(port_);
      TestRequest request;
      request.set_message("before garbage");
      RawRequest raw = RequestFor(&request);
      client.Send(raw);
      client.SendBytes("GARBAGE!GARBAGE!");
      RawReply reply;
      ASSERT_TRUE(client.Read(&reply));
      EXPECT_EQ(0, reply.error_code);
      EXPECT_TRUE(client.WaitForClose());
      ++expected_malformed;
    }
    {
      // Ten pipelined requests and garbage in one write: every request read before the garbage is
      // answered (in any order: calls run concurrently, replies carry their correlation ids), then
      // the connection closes.
      RawClient client(port_);
      std::string bytes;
      for (int i = 0; i < 10; ++i) {
        TestRequest request;
        request.set_message("pipelined " + std::to_string(i));
        bytes += RawClient::Encode(RequestFor(&request), 100 + i);
      }
      client.SendBytes(bytes + "GARBAGE!GARBAGE!");
      std::set<int64_t> answered;
      for (int i = 0; i < 10; ++i) {
        RawReply reply;
        ASSERT_TRUE(client.Read(&reply)) << "reply " << i;
        answered.insert(reply.correlation_id);
        EXPECT_EQ(0, reply.error_code) << reply.error_text;
      }
      std::set<int64_t> sent;
      for (int64_t id = 100; id < 110; ++id) sent.insert(id);
      EXPECT_EQ(sent, answered);
      EXPECT_TRUE(client.WaitForClose());
      ++expected_malformed;
    }
    {
      // Truncated frames, then the client closes: not a framing error, nothing to answer.
      TestRequest request;
      request.set_message("truncated");
      RawRequest raw = RequestFor(&request);
      const std::string frame = RawClient::Encode(raw, 1);
      for (size_t cut : {size_t{3}, size_t{11}, frame.size() / 2, frame.size() - 1}) {
        RawClient client(port_);
        client.SendBytes(frame.substr(0, cut));
        client.Close();
      }
    }
  });
  // The bound: the good client's connection and one hostile connection (at most two at once).
  meter_.Finish(2 * BaiduStdConnectionBound(options) + ProcessCachesBound(options, 2), GetParam());
  const int good_calls = good_->calls();  // stopped: no more calls
  EXPECT_EQ(expected_malformed, StatSoon(&ServerStats::malformed_frames, expected_malformed));
  // Every hostile connection is gone (the good client's may still be open).
  for (int i = 0; i < 200 && server_->GetServerStats().connections_open > 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_LE(server_->GetServerStats().connections_open, 1u);
  // Each round's request before garbage and ten pipelined ones ran; no hostile frame reached one.
  EXPECT_EQ(0, service_->handler_calls() - good_calls - rounds * (1 + 10));
  ExpectAllPairsReleased();
}

// Large requests refused from their head (here: an unknown method), back to back, each 16 MiB:
// the server answers each at once and discards its body unread (docs/server.md, "Overload"), so
// the attacker's bytes cost no memory and the good client keeps up.
TEST_P(HostileInputTest, LargeRequestsRefusedFromTheirHeadAreDiscardedUnread) {
  ServerOptions options;
  options.num_threads = 1;
  options.memory_mode = GetParam();
  StartServer(options);
  StartMeasuredGoodClient();
  RawRequest refused;
  refused.method = "Nope";
  refused.raw_payload = std::string(16u << 20, 'h');
  const std::string bytes = RawClient::Encode(refused, 7);
  int refusals = 0;
  const int rounds = RepeatAttack([&] {
    RawClient client(port_);
    ASSERT_TRUE(client.connected());
    for (int i = 0; i < 4; ++i) client.SendBytes(bytes);
    for (int i = 0; i < 4; ++i) {
      RawReply reply;
      ASSERT_TRUE(client.Read(&reply));
      EXPECT_EQ(ENOMETHOD, reply.error_code) << reply.error_text;
      ++refusals;
    }
  });
  meter_.Finish(2 * BaiduStdConnectionBound(options) + ProcessCachesBound(options, 2), GetParam());
  EXPECT_EQ(4 * rounds, refusals);
  // Nearly all of each refused request went unread (a read may take the head's page and more).
  EXPECT_GE(server_->GetServerStats().refused_bytes_unread,
            static_cast<uint64_t>(refusals) * (bytes.size() - (1u << 20)));
}

}  // namespace
}  // namespace arenarpc::e2e
