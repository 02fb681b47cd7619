// Nghttp2Core (protocol/h2/nghttp2_core.h), the nghttp2 session under both gRPC sessions, without
// sockets: what it announces when created, its first failure (GOAWAY and the reason kept), an
// owner's own termination, and feeding a BufferChain span by span.
#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/h2/nghttp2_core.h"

namespace arenarpc::protocol::h2 {
namespace {

struct FrameHead {
  uint32_t length = 0;
  uint8_t type = 0;
  uint32_t stream_id = 0;
  std::string payload;
};

// The frames of `bytes` (after the client preface, when it starts with it).
std::vector<FrameHead> Frames(std::string bytes) {
  constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  if (bytes.compare(0, kPreface.size(), kPreface) == 0) bytes.erase(0, kPreface.size());
  std::vector<FrameHead> frames;
  size_t at = 0;
  while (at + 9 <= bytes.size()) {
    const auto byte = [&](size_t i) { return static_cast<uint8_t>(bytes[at + i]); };
    FrameHead frame;
    frame.length = (uint32_t{byte(0)} << 16) | (uint32_t{byte(1)} << 8) | byte(2);
    frame.type = byte(3);
    frame.stream_id = ((uint32_t{byte(5)} << 24) | (uint32_t{byte(6)} << 16) |
                       (uint32_t{byte(7)} << 8) | byte(8)) & 0x7fffffff;
    frame.payload = bytes.substr(at + 9, frame.length);
    frames.push_back(frame);
    at += 9 + frame.length;
  }
  return frames;
}

uint32_t Word(const std::string& payload, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(payload[at + i]); };
  return (uint32_t{byte(0)} << 24) | (uint32_t{byte(1)} << 16) | (uint32_t{byte(2)} << 8) | byte(3);
}

std::string Output(Nghttp2Core& core) {
  net::BufferChain out;
  EXPECT_EQ(0, core.Drain(&out));
  return out.ToString();
}

TEST(Nghttp2Core, AnnouncesItsSettingsAndOpensTheConnectionWindowToTheBudget) {
  Nghttp2Core client(Nghttp2Core::Side::kClient, SessionCallbacks{},
                     {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1000}},
                     1u << 20, nullptr);
  EXPECT_FALSE(client.failed());
  const std::string bytes = Output(client);
  ASSERT_EQ(0u, bytes.rfind("PRI * HTTP/2.0", 0));
  const std::vector<FrameHead> frames = Frames(bytes);
  ASSERT_EQ(2u, frames.size());
  EXPECT_EQ(NGHTTP2_SETTINGS, frames[0].type);
  ASSERT_EQ(12u, frames[0].length);  // two settings of 6 bytes
  EXPECT_EQ(1000u, Word(frames[0].payload, 8));
  EXPECT_EQ(NGHTTP2_WINDOW_UPDATE, frames[1].type);
  EXPECT_EQ(0u, frames[1].stream_id);
  EXPECT_EQ((1u << 20) - 65535u, Word(frames[1].payload, 0));

  // A server core takes it: its own SETTINGS and the ACK go back.
  Nghttp2Core server(Nghttp2Core::Side::kServer, SessionCallbacks{},
                     {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 7}}, 65535, nullptr);
  ASSERT_EQ(static_cast<ssize_t>(bytes.size()), server.Feed(bytes));
  EXPECT_TRUE(server.Check(0, "HTTP/2"));
  const std::vector<FrameHead> answer = Frames(Output(server));
  ASSERT_GE(answer.size(), 2u);
  EXPECT_EQ(NGHTTP2_SETTINGS, answer[0].type);
  EXPECT_EQ(7u, Word(answer[0].payload, 2));
  EXPECT_TRUE(server.want_read());
}

TEST(Nghttp2Core, TheFirstFailureSendsGoawayAndKeepsItsReason) {
  Nghttp2Core server(Nghttp2Core::Side::kServer, SessionCallbacks{}, {}, 65535, nullptr);
  const ssize_t rv = server.Feed("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_LT(rv, 0);
  EXPECT_FALSE(server.Check(static_cast<int>(rv), "HTTP/2"));
  EXPECT_TRUE(server.failed());
  EXPECT_EQ(0u, server.error().rfind("HTTP/2: ", 0)) << server.error();
  const std::string first = server.error();
  EXPECT_FALSE(server.Check(NGHTTP2_ERR_NOMEM, "later"));  // the first reason stays
  EXPECT_EQ(first, server.error());
  const std::vector<FrameHead> frames = Frames(Output(server));
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(NGHTTP2_GOAWAY, frames.back().type);
  EXPECT_EQ(uint32_t{NGHTTP2_PROTOCOL_ERROR}, Word(frames.back().payload, 4));
  EXPECT_FALSE(server.want_read());
}

TEST(Nghttp2Core, TerminateEndsTheSessionForTheOwnersReason) {
  Nghttp2Core server(Nghttp2Core::Side::kServer, SessionCallbacks{}, {}, 65535, nullptr);
  server.Terminate("flood: too many PINGs", NGHTTP2_ENHANCE_YOUR_CALM);
  EXPECT_TRUE(server.failed());
  EXPECT_EQ("flood: too many PINGs", server.error());
  const std::vector<FrameHead> frames = Frames(Output(server));
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(NGHTTP2_GOAWAY, frames.back().type);
  EXPECT_EQ(uint32_t{NGHTTP2_ENHANCE_YOUR_CALM}, Word(frames.back().payload, 4));
}

TEST(Nghttp2Core, ForEachSpanFeedsInOrderAndStopsAtTheFirstRefusal) {
  net::BufferChain input;
  for (int i = 0; i < 3; ++i) {
    net::BufferChain part;  // moved in whole: one span (at least) each
    part.Append(std::string(100, static_cast<char>('a' + i)));
    input.Append(std::move(part));
  }
  std::string fed;
  EXPECT_TRUE(Nghttp2Core::ForEachSpan(input, [&](std::string_view span) {
    fed += span;
    return true;
  }));
  EXPECT_EQ(input.ToString(), fed);
  ASSERT_EQ(3u, input.span_count());
  size_t calls = 0;
  EXPECT_FALSE(Nghttp2Core::ForEachSpan(input, [&](std::string_view) { return ++calls < 1; }));
  EXPECT_EQ(1u, calls);
}

}  // namespace
}  // namespace arenarpc::protocol::h2
