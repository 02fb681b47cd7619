// The client side of the HTTP/2 + gRPC glue (protocol/h2/grpc_client_session) without sockets:
// against our own GrpcServerSession (requests, responses, statuses, metadata, the stream cap,
// cancellation), and against a scripted nghttp2 server for what a server may do wrong — GOAWAY
// with calls past its last stream, a huge header list, endless DATA under flow control — checking
// the memory bound of docs/grpc.md after every exchange.
#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/error_codes.h"
#include "protocol/h2/grpc_client_session.h"
#include "protocol/h2/grpc_server_session.h"
#include "scripted_h2_server.h"

namespace arenarpc::protocol::h2 {
namespace {

using testing_h2::ScriptedH2Server;

GrpcClientRequest Request(const std::string& message, Metadata metadata = {},
                          int64_t timeout_ms = -1) {
  GrpcClientRequest request;
  request.path = "/a.B/C";
  request.authority = "test";
  if (timeout_ms >= 0) {
    request.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  }
  request.metadata = std::move(metadata);
  request.message.Append(message);
  return request;
}

// Moves bytes both ways until neither side has more; `check` runs after every step.
template <class Server>
void Pump(GrpcClientSession& client, Server& server, const std::function<void()>& check = {}) {
  for (int round = 0; round < 10000; ++round) {
    net::BufferChain out;
    client.TakeOutput(&out);
    std::string to_client = server.Output();
    if (out.empty() && to_client.empty()) return;
    if (!out.empty()) {
      ASSERT_TRUE(server.Input(out.ToString()));
    }
    if (!to_client.empty()) client.Receive(to_client);
    if (check) check();
  }
}

// GrpcServerSession with the Input/Output shape of ScriptedH2Server.
struct OurServer {
  explicit OurServer(const GrpcServerSession::Limits& limits) : session(limits) {}
  bool Input(const std::string& bytes) { return session.Receive(bytes); }
  std::string Output() {
    net::BufferChain out;
    session.TakeOutput(&out);
    return out.ToString();
  }
  GrpcServerSession session;
};

std::vector<GrpcClientResponse> Responses(GrpcClientSession& client) {
  std::vector<GrpcClientResponse> all;
  GrpcClientResponse response;
  while (client.PopResponse(&response)) all.push_back(std::move(response));
  return all;
}

// grpc-timeout is what is left of the deadline when the stream opens: a request that waited for a
// stream slot tells the server the time it has left, not the time it had when it was packed, and
// one whose deadline passed while it waited is not sent at all.
TEST(GrpcClientSessionTest, ARequestThatWaitedForAStreamSlotSendsTheTimeLeft) {
  GrpcClientSession::Limits limits;
  limits.max_concurrent_streams = 1;
  GrpcClientSession client(limits);
  OurServer server({});
  client.Start(1, Request("first", {}, 10000));
  client.Start(2, Request("waits", {}, 400));     // 400 ms when packed
  client.Start(3, Request("expires", {}, 100));  // passes while it waits
  Pump(client, server);
  GrpcRequest request;
  ASSERT_TRUE(server.session.PopRequest(&request));
  EXPECT_EQ("first", request.message.ToString());
  EXPECT_FALSE(server.session.PopRequest(&request));  // one stream slot
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  net::BufferChain reply;
  reply.Append("done");
  server.session.Respond(request.stream_id, std::move(reply), false, {});
  Pump(client, server);
  ASSERT_TRUE(server.session.PopRequest(&request));
  EXPECT_EQ("waits", request.message.ToString());
  EXPECT_GT(request.timeout_ms, 0);
  EXPECT_LE(request.timeout_ms, 200);  // 400 ms less the 200 it waited (was 400 when packed)
  net::BufferChain second;
  second.Append("done");
  server.session.Respond(request.stream_id, std::move(second), false, {});
  Pump(client, server);
  EXPECT_FALSE(server.session.PopRequest(&request));  // "expires" never left
  EXPECT_EQ(1u, client.counters().expired_unsent);
  EXPECT_EQ(0u, client.unsent_request_bytes());
  EXPECT_EQ(0u, client.open_streams());
  // Its call fails by its own deadline timer; the session answers only the two it sent.
  std::vector<GrpcClientResponse> responses = Responses(client);
  ASSERT_EQ(2u, responses.size());
  EXPECT_EQ(1, responses[0].tag);
  EXPECT_EQ(2, responses[1].tag);
}

TEST(GrpcClientSessionTest, CallsStatusesMetadataAndTheStreamCap) {
  EXPECT_EQ("a%b\n\xc3\xa9 c", PercentDecode("a%25b%0A%C3%A9 c"));
  EXPECT_EQ("100%", PercentDecode("100%"));
  EXPECT_EQ(ENOMETHOD, ErrorCodeForGrpcStatus(12));
  EXPECT_EQ(ERPCTIMEDOUT, ErrorCodeForGrpcStatus(4));
  EXPECT_EQ(ELIMIT, ErrorCodeForGrpcStatus(8));
  EXPECT_EQ(EINTERNAL, ErrorCodeForGrpcStatus(14));  // UNAVAILABLE, as brpc maps it

  GrpcClientSession::Limits limits;
  limits.max_concurrent_streams = 2;
  GrpcClientSession client(limits);
  OurServer server({});
  for (int i = 0; i < 5; ++i) {
    client.Start(100 + i, Request("m" + std::to_string(i), {{"X-Key", "v" + std::to_string(i)}},
                                  250));
  }
  Pump(client, server);
  // Only two streams are open; three requests wait (their bytes counted as unsent).
  EXPECT_EQ(2u, client.open_streams());
  EXPECT_EQ(3u * (5 + 2), client.unsent_request_bytes());
  std::vector<int64_t> started = client.TakeStarted();
  EXPECT_EQ((std::vector<int64_t>{100, 101}), started);
  int answered = 0;
  for (int round = 0; round < 10; ++round) {
    GrpcRequest request;
    while (server.session.PopRequest(&request)) {
      EXPECT_EQ("/a.B/C", request.path);
      EXPECT_GT(request.timeout_ms, 0);
      EXPECT_LE(request.timeout_ms, 250);
      ASSERT_EQ(1u, request.metadata.size());
      EXPECT_EQ("x-key", request.metadata[0].first);  // lower-cased on the wire
      const std::string message = request.message.ToString();
      if (message == "m3") {
        server.session.Fail(request.stream_id, GrpcStatus::kPermissionDenied, "no\n100%");
      } else {
        net::BufferChain reply;
        reply.Append("re:" + message);
        server.session.Respond(request.stream_id, std::move(reply), false,
                               {{"y-back", request.metadata[0].second}});
      }
      ++answered;
    }
    Pump(client, server);
  }
  EXPECT_EQ(5, answered);
  std::vector<GrpcClientResponse> responses = Responses(client);
  ASSERT_EQ(5u, responses.size());
  for (const GrpcClientResponse& response : responses) {
    const int i = static_cast<int>(response.tag - 100);
    EXPECT_EQ(0, response.error_code) << response.error_text;
    if (i == 3) {
      EXPECT_EQ(7, response.grpc_status);
      EXPECT_EQ("no\n100%", response.grpc_message);
    } else {
      EXPECT_EQ(0, response.grpc_status);
      EXPECT_EQ("re:m" + std::to_string(i), response.message.ToString());
      ASSERT_EQ(1u, response.metadata.size());
      EXPECT_EQ("v" + std::to_string(i), response.metadata[0].second);
    }
  }
  EXPECT_EQ(0u, client.open_streams());
  EXPECT_EQ(0u, client.unsent_request_bytes());
  EXPECT_EQ(0u, client.held_response_bytes());

  // Cancel: the open stream is reset (the server sees it), a waiting request is dropped.
  client.Start(7, Request("slow"));
  client.Start(8, Request("a"));
  client.Start(9, Request("b"));
  Pump(client, server);
  client.Cancel(7);
  client.Cancel(9);  // still waiting for a slot
  Pump(client, server);
  EXPECT_EQ((std::vector<int32_t>{11}), server.session.TakeCanceled());  // the 6th stream
  GrpcRequest request;
  while (server.session.PopRequest(&request)) {
    server.session.Fail(request.stream_id, GrpcStatus::kInternal, "x");
  }
  Pump(client, server);
  responses = Responses(client);
  ASSERT_EQ(1u, responses.size());  // none for the canceled ones
  EXPECT_EQ(8, responses[0].tag);
  EXPECT_EQ(0u, client.unsent_request_bytes());
}

TEST(GrpcClientSessionTest, GoawayLeavesLaterStreamsUnprocessed) {
  GrpcClientSession client({});
  ScriptedH2Server server;
  server.on_request = [&](int32_t id) {
    if (id == 3) {  // two requests arrived: take the first only
      server.GoAway(1);
      server.RespondOk(1, "one");
    }
  };
  client.Start(1, Request("x"));
  client.Start(2, Request("y"));
  Pump(client, server);
  EXPECT_TRUE(client.goaway_received());
  client.Start(3, Request("z"));  // after GOAWAY: not sent here at all
  std::vector<GrpcClientResponse> responses = Responses(client);
  ASSERT_EQ(3u, responses.size());
  std::sort(responses.begin(), responses.end(),
            [](const auto& a, const auto& b) { return a.tag < b.tag; });
  EXPECT_FALSE(responses[0].unprocessed);
  EXPECT_EQ("one", responses[0].message.ToString());
  EXPECT_TRUE(responses[1].unprocessed) << responses[1].error_text;
  EXPECT_TRUE(responses[2].unprocessed);
  EXPECT_TRUE(client.Idle());
}

// A header list past max_header_list_bytes fails its call (the connection goes on); one of
// megabytes ends the connection (nghttp2 refuses more than a few CONTINUATION frames). Neither
// leaves anything held.
TEST(GrpcClientSessionTest, HugeHeaderListIsCutAtTheLimit) {
  GrpcClientSession::Limits limits;
  limits.max_header_list_bytes = 16u << 10;
  for (const int count : {100, 2000}) {  // ~100 KB, ~2 MB of distinct headers
    GrpcClientSession client(limits);
    ScriptedH2Server server;
    server.on_request = [&](int32_t id) {
      testing_h2::Headers headers = {{":status", "200"}, {"content-type", "application/grpc"}};
      for (int i = 0; i < count; ++i) {
        headers.emplace_back("x-h" + std::to_string(i), std::string(1000, 'h'));
      }
      server.Respond(id, std::move(headers), nullptr, {});
    };
    client.Start(1, Request("x"));
    Pump(client, server, [&] { EXPECT_EQ(0u, client.held_response_bytes()); });
    EXPECT_EQ(1u, client.counters().header_limit_hits);
    std::vector<GrpcClientResponse> responses = Responses(client);
    if (count == 100) {
      EXPECT_FALSE(client.failed()) << client.error();
      ASSERT_EQ(1u, responses.size());
      EXPECT_EQ(ERESPONSE, responses[0].error_code);
      EXPECT_NE(std::string::npos, responses[0].error_text.find("header list"))
          << responses[0].error_text;
      EXPECT_TRUE(responses[0].metadata.empty());
    } else {
      EXPECT_TRUE(client.failed());  // the owner fails the connection's calls
      EXPECT_NE(std::string::npos, client.error().find("CONTINUATION")) << client.error();
    }
  }
}

// Eight streams of endless DATA (each message declares 200 KB, within the limit, then more keeps
// coming) against a 64 KB budget and 16 KB windows: what the session holds never passes
// budget + one message + streams x window, and every call fails cleanly.
// A streaming call whose server sends small messages without end: messages come out one by one,
// and while any popped one is not Release()d the stream's window stays shut, so what the session
// and the owner hold stays within max_message_bytes + 5 + stream_window; releasing lets more in.
TEST(GrpcClientSessionTest, StreamingMessagesWaitForReleaseWithinTheWindow) {
  GrpcClientSession::Limits limits;
  limits.max_message_bytes = 4096;
  limits.stream_window = 16u << 10;
  GrpcClientSession client(limits);
  ScriptedH2Server server;
  constexpr size_t kWire = 100;  // each message: 5-byte prefix + 95 bytes
  size_t sent = 0;
  std::string request_bytes;
  server.on_request = [&](int32_t id) {
    server.Respond(id, {{":status", "200"}, {"content-type", "application/grpc"}},
                   [&sent](uint8_t* buf, size_t length, bool*) {
                     for (size_t i = 0; i < length; ++i, ++sent) {
                       const size_t at = sent % kWire;
                       buf[i] = at < 4 ? 0 : at == 4 ? kWire - 5 : 'd';
                     }
                     return length;  // never ends
                   },
                   {});
  };
  GrpcClientRequest request = Request("");
  request.message.clear();
  request.streaming = true;
  client.Start(1, std::move(request));
  ASSERT_TRUE(client.Send(1, [] { net::BufferChain m; m.Append("hello"); return m; }(), false));
  EXPECT_EQ(10u, client.unsent_bytes(1));
  EXPECT_TRUE(client.CloseSend(1));  // the scripted server answers a complete request
  EXPECT_FALSE(client.CloseSend(1));
  const size_t bound = limits.max_message_bytes + 5 + limits.stream_window;
  size_t popped = 0, released = 0;
  GrpcStreamMessage message;
  const auto pop_all = [&] {
    while (client.PopMessage(&message)) {
      ASSERT_EQ(1, message.tag);
      ASSERT_EQ(kWire, message.wire_bytes);
      ASSERT_EQ(std::string(kWire - 5, 'd'), message.message.ToString());
      popped += message.wire_bytes;
    }
  };
  Pump(client, server, [&] {
    pop_all();
    ASSERT_LE(popped - released, bound);
  });
  EXPECT_EQ(0u, client.unsent_bytes(1));  // "hello" went out
  EXPECT_GT(popped, limits.stream_window / 2);  // the first window's worth arrived
  EXPECT_LE(popped, bound);
  const size_t first = popped;
  client.Release(1, popped - released);  // read: the window reopens
  released = popped;
  Pump(client, server, [&] {
    pop_all();
    ASSERT_LE(popped - released, bound);
  });
  EXPECT_GT(popped, first);
  client.Cancel(1);  // RST_STREAM; nothing more comes out for it
  Pump(client, server);
  EXPECT_FALSE(client.PopMessage(&message));
  EXPECT_FALSE(client.Send(1, net::BufferChain(), false));
  GrpcClientResponse response;
  EXPECT_FALSE(client.PopResponse(&response));
}

// A server that finishes a streaming call before the client ended its side: the call ends with
// the server's status (the client resets the stream, NO_ERROR) and takes no more requests.
TEST(GrpcClientSessionTest, ServerFinishingAStreamEarlyEndsIt) {
  GrpcClientSession client(GrpcClientSession::Limits{});
  ScriptedH2Server server;
  server.on_open_request = [&](int32_t id) { server.RespondOk(id, "early"); };
  GrpcClientRequest request = Request("");
  request.message.clear();
  request.streaming = true;
  client.Start(4, std::move(request));
  Pump(client, server);
  GrpcStreamMessage message;
  ASSERT_TRUE(client.PopMessage(&message));
  EXPECT_EQ("early", message.message.ToString());
  client.Release(4, message.wire_bytes);
  std::vector<GrpcClientResponse> responses = Responses(client);
  ASSERT_EQ(1u, responses.size());
  EXPECT_EQ(0, responses[0].error_code) << responses[0].error_text;
  EXPECT_EQ(0, responses[0].grpc_status);
  EXPECT_EQ(0u, client.open_streams());
  EXPECT_FALSE(client.Send(4, net::BufferChain(), false));
  EXPECT_TRUE(client.Idle());
}

TEST(GrpcClientSessionTest, EndlessDataStaysWithinTheBound) {
  GrpcClientSession::Limits limits;
  limits.response_bytes_budget = 64u << 10;
  limits.max_message_bytes = 256u << 10;
  limits.stream_window = 16u << 10;
  limits.max_concurrent_streams = 8;
  GrpcClientSession client(limits);
  ScriptedH2Server server;
  constexpr uint32_t kDeclared = 200u << 10;
  std::vector<size_t> sent(32, 0);
  server.on_request = [&](int32_t id) {
    server.Respond(id, {{":status", "200"}, {"content-type", "application/grpc"}},
                   [&sent, id](uint8_t* buf, size_t length, bool*) {
                     for (size_t i = 0; i < length; ++i) {
                       const size_t at = sent[id]++;
                       buf[i] = at == 0 ? 0 : at < 5 ? static_cast<uint8_t>(kDeclared >> (8 * (4 - at))) : 'd';
                     }
                     return length;  // never ends
                   },
                   {});
  };
  const size_t bound = limits.response_bytes_budget + limits.max_message_bytes + 5 +
                       limits.max_concurrent_streams * limits.stream_window;
  size_t peak = 0;
  for (int i = 0; i < 8; ++i) client.Start(i, Request("x"));
  Pump(client, server, [&] {
    peak = std::max(peak, client.held_response_bytes());
    ASSERT_LE(client.held_response_bytes(), bound);
  });
  std::vector<GrpcClientResponse> responses = Responses(client);
  ASSERT_EQ(8u, responses.size());
  for (const GrpcClientResponse& response : responses) {
    EXPECT_EQ(ERESPONSE, response.error_code);
    EXPECT_NE(std::string::npos, response.error_text.find("more than one")) << response.error_text;
  }
  EXPECT_GT(peak, limits.response_bytes_budget);  // the budget was really pressed
  EXPECT_EQ(0u, client.held_response_bytes());
  // A message declared past max_message_bytes is refused at its prefix.
  GrpcClientSession small(limits);
  ScriptedH2Server big;
  big.on_request = [&](int32_t id) {
    big.RespondOk(id, std::string((256u << 10) + 1, 'b'));
  };
  small.Start(1, Request("x"));
  Pump(small, big, [&] { ASSERT_LE(small.held_response_bytes(), 64u << 10); });
  responses = Responses(small);
  ASSERT_EQ(1u, responses.size());
  EXPECT_EQ(ERESPONSE, responses[0].error_code);
  EXPECT_NE(std::string::npos, responses[0].error_text.find("max_body_size"));
}

// BDP-based growth (BdpWindow) on both sides: a 4 MiB request and a 4 MiB response over windows
// of 64 KiB, with growth up to 1 MiB, take fewer round trips than with fixed windows; the windows
// grow past 64 KiB, never past the cap, and what each side holds stays within its bound.
TEST(GrpcClientSessionTest, BdpGrowsTheWindowsOnALargeTransferWithinTheCap) {
  constexpr uint32_t kWindow = 64u << 10;
  constexpr uint32_t kCap = 1u << 20;
  constexpr size_t kMessage = 4u << 20;
  const auto transfer = [&](uint32_t max_window, uint32_t* server_window,
                            uint32_t* client_window) {
    const auto small = [&](auto limits) {  // both sides' Limits
      limits.stream_window = limits.connection_window = kWindow;
      limits.max_message_bytes = 8u << 20;
      limits.max_window = max_window;
      return limits;
    };
    GrpcServerSession::Limits server_limits = small(GrpcServerSession::Limits{});
    server_limits.request_bytes_budget = 64u << 10;
    OurServer server(server_limits);
    GrpcClientSession::Limits client_limits = small(GrpcClientSession::Limits{});
    client_limits.response_bytes_budget = 64u << 10;
    GrpcClientSession client(client_limits);
    const std::string payload(kMessage, 'q');
    client.Start(1, Request(payload));
    int rounds = 0;
    bool responded = false;
    Pump(client, server, [&] {
      ++rounds;
      const size_t cap = std::max(kWindow, max_window);
      ASSERT_LE(server.session.connection_window(), cap);
      ASSERT_LE(server.session.stream_window(), cap);
      ASSERT_LE(client.connection_window(), cap);
      ASSERT_LE(client.unconsumed_bytes(), client_limits.response_bytes_budget +
                                               client_limits.max_message_bytes + 5 +
                                               client.connection_window());
      GrpcRequest request;
      while (server.session.PopRequest(&request)) {
        ASSERT_EQ(kMessage, request.message.size());
        net::BufferChain reply;
        reply.Append(payload);
        server.session.Respond(request.stream_id, std::move(reply), false, {});
        responded = true;
      }
    });
    EXPECT_TRUE(responded);
    std::vector<GrpcClientResponse> responses = Responses(client);
    EXPECT_EQ(1u, responses.size());
    if (!responses.empty()) {
      EXPECT_EQ(0, responses[0].error_code) << responses[0].error_text;
      EXPECT_EQ(payload, responses[0].message.ToString());
    }
    EXPECT_EQ(0u, client.unconsumed_bytes());
    *server_window = server.session.stream_window();
    *client_window = client.stream_window();
    if (max_window == 0) {
      EXPECT_EQ(0u, server.session.counters().window_growths);
      EXPECT_EQ(0u, client.counters().window_growths);
    } else {
      EXPECT_GT(server.session.counters().window_growths, 0u);
      EXPECT_GT(client.counters().window_growths, 0u);
    }
    return rounds;
  };
  uint32_t fixed_server = 0, fixed_client = 0, grown_server = 0, grown_client = 0;
  const int fixed_rounds = transfer(0, &fixed_server, &fixed_client);
  const int grown_rounds = transfer(kCap, &grown_server, &grown_client);
  EXPECT_EQ(kWindow, fixed_server);
  EXPECT_EQ(kWindow, fixed_client);
  EXPECT_GT(grown_server, 2 * kWindow);  // the request's transfer grew the server's windows
  EXPECT_GT(grown_client, 2 * kWindow);  // the response's grew the client's
  EXPECT_LE(grown_server, kCap);
  EXPECT_LE(grown_client, kCap);
  EXPECT_LT(grown_rounds * 2, fixed_rounds) << "rounds: " << grown_rounds << " grown, "
                                            << fixed_rounds << " fixed";
  RecordProperty("rounds_fixed", fixed_rounds);
  RecordProperty("rounds_grown", grown_rounds);
}

// Streaming calls whose readers stall: each holds what its stream window let in, and all of them
// together no more than response_bytes_budget + one message + the connection window (without the
// connection bound, 12 streams x 32 KiB would be held). A call that reads keeps going while the
// stalled ones hold less than the budget; once they hold the whole bound it waits too (the
// connection window is shared), and goes on as soon as they read.
TEST(GrpcClientSessionTest, StalledStreamsAreBoundedByTheConnectionWindow) {
  GrpcClientSession::Limits limits;
  limits.max_message_bytes = 4096;
  limits.stream_window = 32u << 10;
  limits.connection_window = 64u << 10;
  limits.response_bytes_budget = 64u << 10;
  GrpcClientSession client(limits);
  ScriptedH2Server server;
  constexpr size_t kWire = 1000;  // each message: 5-byte prefix + 995 bytes
  std::map<int32_t, size_t> sent;
  server.on_request = [&](int32_t id) {
    server.Respond(id, {{":status", "200"}, {"content-type", "application/grpc"}},
                   [&sent, id](uint8_t* buf, size_t length, bool*) {
                     for (size_t i = 0; i < length; ++i) {
                       const size_t at = sent[id]++ % kWire;
                       buf[i] = at < 3 ? 0 : at == 3 ? (kWire - 5) >> 8
                                       : at == 4 ? (kWire - 5) & 0xff : 'd';
                     }
                     return length;  // never ends
                   },
                   {});
  };
  constexpr int kStreams = 13;  // tag 0 reads, tags 1..12 stall
  for (int tag = 0; tag < kStreams; ++tag) {
    GrpcClientRequest request = Request("");
    request.message.clear();
    request.streaming = true;
    client.Start(tag, std::move(request));
    ASSERT_TRUE(client.CloseSend(tag));
  }
  const size_t bound =
      limits.response_bytes_budget + limits.max_message_bytes + 5 + limits.connection_window;
  std::map<int64_t, size_t> popped;
  size_t reader_cap = 256u << 10;  // the reader stops reading here, so that the exchange ends
  size_t peak = 0;
  const auto step = [&] {
    GrpcStreamMessage message;
    while (client.PopMessage(&message)) {
      ASSERT_EQ(kWire, message.wire_bytes);
      popped[message.tag] += message.wire_bytes;
      if (message.tag == 0 && popped[0] <= reader_cap) client.Release(0, message.wire_bytes);
    }
    peak = std::max(peak, client.unconsumed_bytes());
    ASSERT_LE(client.unconsumed_bytes(), bound);
  };
  Pump(client, server, step);
  size_t stalled = 0;
  for (int tag = 1; tag < kStreams; ++tag) {
    EXPECT_LE(popped[tag], limits.stream_window + limits.max_message_bytes + 5) << tag;
    stalled += popped[tag];
  }
  EXPECT_GE(stalled, limits.response_bytes_budget);  // the budget was pressed
  EXPECT_LT(stalled, kStreams * size_t{limits.stream_window} / 2);  // the bound bit
  EXPECT_GE(peak, limits.response_bytes_budget);
  RecordProperty("stalled_bytes", static_cast<int>(stalled));
  RecordProperty("reader_bytes", static_cast<int>(popped[0]));
  // The stalled calls read: everything they held is given back and the reader goes on.
  const size_t reader_before = popped[0];
  reader_cap = reader_before + (256u << 10);
  for (int tag = 1; tag < kStreams; ++tag) client.Release(tag, popped[tag]);
  Pump(client, server, [&] {
    GrpcStreamMessage message;
    while (client.PopMessage(&message)) {
      popped[message.tag] += message.wire_bytes;
      if (message.tag == 0 && popped[0] <= reader_cap) client.Release(0, message.wire_bytes);
    }
    ASSERT_LE(client.unconsumed_bytes(), bound);
  });
  EXPECT_GT(popped[0], reader_before);
}

}  // namespace
}  // namespace arenarpc::protocol::h2
