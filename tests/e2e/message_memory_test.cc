// Message memory: a request whose parsed form would be far larger than its bytes is refused before
// parsing (EREQUEST; HTTP 413), the calls in flight share max_inflight_message_memory (ELIMIT),
// and the heap a spike grew goes back to the system — while a good client on another connection
// keeps calling without an error.

#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/buffer_chain.h"
#include "http_client.h"
#include "memory/message_memory_budget.h"
#include "process_rss.h"
#include "server_fixture.h"

namespace arenarpc::e2e {
namespace {

// Calls Echo on its own connection until stopped; counts failures.
class GoodClient {
 public:
  explicit GoodClient(std::unique_ptr<Channel> channel) : channel_(std::move(channel)) {
    thread_ = std::thread([this] {
      TestService_Stub stub(channel_.get());
      int i = 0;
      while (!stop_.load() || i < 10) {
        Controller controller;
        TestRequest request;
        request.set_message("good-" + std::to_string(i++));
        request.add_items("x");
        TestResponse response;
        stub.Echo(&controller, &request, &response, nullptr);
        (!controller.Failed() && response.message() == request.message() ? ok_ : errors_)++;
      }
    });
  }
  // Stops and returns the number of failed calls.
  int Stop() {
    stop_ = true;
    thread_.join();
    return errors_.load();
  }
  int ok() const { return ok_.load(); }

 private:
  std::unique_ptr<Channel> channel_;
  std::atomic<bool> stop_{false};
  std::atomic<int> ok_{0}, errors_{0};
  std::thread thread_;
};

// TestRequest bytes: message "x", then `count` empty `empties` elements (2 bytes each).
std::string EmptiesPayload(size_t count) {
  std::string payload = "\x0a\x01x";
  payload.reserve(payload.size() + 2 * count);
  for (size_t i = 0; i < count; ++i) payload.append("\x72\x00", 2);  // field 14, length 0
  return payload;
}

class MessageMemoryTest : public ServerTest {
 protected:
  // A call's charge goes back when the call is destroyed, just after its reply is queued.
  ServerStats StatsOnceNothingIsCharged() {
    ServerStats stats;
    for (int i = 0; i < 500; ++i) {
      stats = server_->GetServerStats();
      if (stats.message_memory_in_flight == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return stats;
  }
};
ARENARPC_ALL_MODES(MessageMemoryTest);

TEST_P(MessageMemoryTest, RequestOfEmptySubMessagesIsRefusedBeforeParsing) {
  ServerOptions options;
  StartServer(options);
  GoodClient good(MakeChannel());
  const size_t wire = 32u << 20;
  RawRequest request;
  request.raw_payload = EmptiesPayload((wire - 3) / 2);
  const std::string frame = RawClient::Encode(request, 1);
  request.raw_payload.reset();
  const uint64_t before = RssBytes();
  ResetPeakRss();

  RawClient hostile(port_);
  ASSERT_TRUE(hostile.connected());
  hostile.SendBytes(frame);
  RawReply reply;
  ASSERT_TRUE(hostile.Read(&reply, std::chrono::seconds(60)));
  EXPECT_EQ(EREQUEST, reply.error_code);
  EXPECT_NE(std::string::npos, reply.error_text.find("max_request_memory=268435456"))
      << reply.error_text;
  const uint64_t peak_growth = PeakRssBytes() - std::min(before, PeakRssBytes());

  EXPECT_EQ(0, good.Stop());
  EXPECT_GT(good.ok(), 0);
  const ServerStats stats = StatsOnceNothingIsCharged();
  EXPECT_EQ(1u, stats.rejected_request_memory);
  EXPECT_EQ(0u, stats.message_memory_in_flight);
  // Parsed, the request would hold ~16.7 M objects (over 1 GiB); refused, the server holds its
  // frame (32 MiB, read into I/O pages) and nothing for the scan. The bound (docs/server.md): the
  // frame plus max_request_memory / 16 at most; the test process also holds the client's frame.
  if (kMeasuresRss) {
    EXPECT_LT(peak_growth, 3 * wire + options.max_request_memory / 16)
        << "peak RSS grew by " << (peak_growth >> 20) << " MiB";
  }
  ExpectAllPairsReleased();
}

TEST_P(MessageMemoryTest, JsonBodyOfEmptyObjectsIsRefusedWith413) {
  ServerOptions options;
  StartServer(options);
  GoodClient good(MakeChannel());
  std::string body = "{\"message\":\"x\",\"empties\":[{}";
  const size_t target = 12u << 20;
  body.reserve(target + 8);
  while (body.size() < target) body += ",{}";
  body += "]}";
  const std::string request =
      HttpClient::Request("POST", "/arenarpc.e2e.TestService/Echo", body);
  body = std::string();
  const uint64_t before = RssBytes();
  ResetPeakRss();

  HttpClient hostile(port_);
  ASSERT_TRUE(hostile.connected());
  ASSERT_TRUE(hostile.Send(request));
  const std::optional<HttpResponse> response = hostile.Read(std::chrono::seconds(60));
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(413, response->status);
  EXPECT_EQ(std::to_string(EREQUEST), response->Header("x-bd-error-code"));
  EXPECT_NE(std::string::npos, response->body.find("max_request_memory")) << response->body;
  const uint64_t peak_growth = PeakRssBytes() - std::min(before, PeakRssBytes());

  EXPECT_EQ(0, good.Stop());
  if (kMeasuresRss) {
    EXPECT_LT(peak_growth, 3 * target + options.max_request_memory / 16)
        << "peak RSS grew by " << (peak_growth >> 20) << " MiB";
  }
  // The same body with a few objects is served.
  HttpClient client(port_);
  ASSERT_TRUE(client.Send(HttpClient::Request("POST", "/arenarpc.e2e.TestService/Echo",
                                              "{\"message\":\"y\",\"empties\":[{},{}]}")));
  const std::optional<HttpResponse> served = client.Read();
  ASSERT_TRUE(served.has_value());
  EXPECT_EQ(200, served->status) << served->body;
}

TEST_P(MessageMemoryTest, InFlightBudgetAnswersElimitAndAdmittedCallsFinish) {
  ServerOptions options;
  options.max_inflight_message_memory = 16u << 20;
  options.num_threads = 4;
  StartServer(options);
  // Each call holds 2 MiB of request strings (plus its echo of nothing) for 200 ms.
  TestRequest big;
  big.set_message("big");
  big.set_block_ms(200);
  for (int i = 0; i < 32; ++i) big.add_ballast(std::string(64u << 10, 'b'));
  const std::string frame = RawClient::Encode(RequestFor(&big), 1);

  std::atomic<int> admitted{0}, limited{0}, other{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 16; ++c) {
    callers.emplace_back([&] {
      RawClient client(port_);
      for (int round = 0; round < 2; ++round) {
        client.SendBytes(frame);
        RawReply reply;
        if (!client.Read(&reply, std::chrono::seconds(30))) {
          other++;
          return;
        }
        if (reply.error_code == 0) {
          admitted++;
        } else if (reply.error_code == ELIMIT &&
                   reply.error_text.find("max_inflight_message_memory=16777216") !=
                       std::string::npos) {
          limited++;
        } else {
          other++;
          ADD_FAILURE() << reply.error_code << " " << reply.error_text;
        }
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(0, other.load());
  EXPECT_GT(admitted.load(), 0);
  EXPECT_GT(limited.load(), 0);  // 16 x 2 MiB of strings cannot all be in flight under 16 MiB
  const ServerStats stats = StatsOnceNothingIsCharged();
  EXPECT_EQ(static_cast<uint64_t>(limited.load()), stats.rejected_message_memory);
  EXPECT_EQ(0u, stats.rejected_timed_out);
  EXPECT_EQ(0u, stats.message_memory_in_flight);
  EXPECT_LE(stats.message_memory_peak, options.max_inflight_message_memory);
  ExpectAllPairsReleased();
}

TEST_P(MessageMemoryTest, HeapGoesBackAfterASpike) {
  ServerOptions options;
  options.num_threads = 4;
  StartServer(options);
  // Requests of many short strings (~400k heap objects, 17 MB on the wire), each held 100 ms.
  TestRequest spike;
  spike.set_message("spike");
  spike.set_block_ms(100);
  const int strings = kMeasuresRss ? 400000 : 100000;  // sanitizers: the load, not the RSS
  for (int i = 0; i < strings; ++i) spike.add_ballast(std::string(40, 's'));
  const std::string frame = RawClient::Encode(RequestFor(&spike), 1);
  spike.Clear();
  const uint64_t before = RssBytes();
  ResetPeakRss();

  std::atomic<int> failed{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 8; ++c) {
    callers.emplace_back([&] {
      RawClient client(port_);
      client.SendBytes(frame);
      RawReply reply;
      if (!client.Read(&reply, std::chrono::seconds(30)) || reply.error_code != 0) failed++;
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(0, failed.load());
  const ServerStats stats = StatsOnceNothingIsCharged();
  EXPECT_EQ(0u, stats.message_memory_in_flight);
  EXPECT_GE(stats.message_memory_peak, memory::MessageMemoryBudget::kTrimAfter);
  EXPECT_GE(stats.message_memory_trims, 1u);
  if (kMeasuresRss) {
    const uint64_t peak_growth = PeakRssBytes() - std::min(before, PeakRssBytes());
    // The last call's release trims the heap (on its thread, after it left the count): allow it
    // a moment.
    // The stated bound (docs/server.md): back within the I/O page cache (64 MiB), the strategies'
    // caches (paged: 16 MiB of pages; reuse: objects over max_object_bytes are not kept) and
    // 16 MiB of what glibc cannot give back.
    const uint64_t bound = 96u << 20;
    uint64_t after_growth = 0;
    for (int i = 0; i < 200; ++i) {
      after_growth = RssBytes() - std::min(before, RssBytes());
      if (after_growth < bound) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_LT(after_growth, bound) << "peak grew " << (peak_growth >> 20) << " MiB, after "
                                   << (after_growth >> 20) << " MiB";
    EXPECT_GT(peak_growth, after_growth);
  }
}

// The I/O page pool is the process's, whatever the strategy: one mode is enough.
class IoPageCacheTest : public ServerTest {
 protected:
  // 64 connections each send all but the last byte of a 256 KiB request: the server holds 64
  // incomplete frames in I/O pages at once (~2,000 pages of 8 KiB), then answers and frees them.
  // Returns the pages cached after the burst (asserted >= 1,000 more than before).
  uint64_t Burst() {
    memory::PageAllocator& pages = net::IoPageAllocator();
    TestRequest burst;
    burst.set_message("burst");
    burst.add_ballast(std::string(256 << 10, 'b'));
    const std::string frame = RawClient::Encode(RequestFor(&burst), 1);
    constexpr int kConnections = 64;
    std::vector<std::unique_ptr<RawClient>> clients;
    for (int c = 0; c < kConnections; ++c) {
      clients.push_back(std::make_unique<RawClient>(port_));
      clients.back()->SendBytes(std::string_view(frame).substr(0, frame.size() - 1));
    }
    const uint64_t cached_before = pages.stats().pages_cached;
    for (int i = 0; i < 500 * kWaitScale; ++i) {  // until the server read what was sent
      if (pages.stats().pages_outstanding >= kConnections * (frame.size() >> 13)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    int failed = 0;
    for (auto& client : clients) {
      client->SendBytes(std::string_view(frame).substr(frame.size() - 1));
    }
    for (auto& client : clients) {
      RawReply reply;
      if (!client->Read(&reply, std::chrono::seconds(10 * kWaitScale)) || reply.error_code != 0) {
        ++failed;
      }
    }
    clients.clear();
    EXPECT_EQ(0, failed);
    const uint64_t cached_after_burst = pages.stats().pages_cached;
    EXPECT_GE(cached_after_burst, cached_before + 1000) << "the burst did not fill the cache";
    return cached_after_burst;
  }

  // Pages cached once they fell below a quarter of `after_burst`, or after 5 s (x kWaitScale).
  static uint64_t CachedOnceReleased(uint64_t after_burst) {
    memory::PageAllocator& pages = net::IoPageAllocator();
    uint64_t cached = after_burst;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5 * kWaitScale);
    while (std::chrono::steady_clock::now() < deadline) {
      cached = pages.stats().pages_cached;
      if (cached < after_burst / 4) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return cached;
  }
};
INSTANTIATE_TEST_SUITE_P(Auto, IoPageCacheTest, ::testing::Values("auto"));

// What a burst left in the process-wide I/O page cache goes back once traffic resumes without
// needing it (docs/server.md; the I/O pool's PagePoolOptions::idle_release is 1 s).
TEST_P(IoPageCacheTest, WhatABurstLeftGoesBackOnceTrafficResumes) {
  StartServer();
  const uint64_t after_burst = Burst();
  auto good = StartGoodClient();  // small calls: they use the pool without needing the pages
  EXPECT_LT(CachedOnceReleased(after_burst), after_burst / 4) << after_burst << " after the burst";
  good->Stop();
  EXPECT_GT(good->calls(), 0);
  EXPECT_EQ(0, good->failures());
}

// ... and when no call follows at all: the server's sweeper runs the idle release on a timer
// (net/io_page_sweeper.h). Without it the pages stay until the next call.
TEST_P(IoPageCacheTest, WhatABurstLeftGoesBackWhenNoCallFollows) {
  StartServer();
  const uint64_t after_burst = Burst();
  EXPECT_LT(CachedOnceReleased(after_burst), after_burst / 4) << after_burst << " after the burst";
}

}  // namespace
}  // namespace arenarpc::e2e
