#include "protocol/http/http_request_decoder.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace arenarpc::protocol {
namespace {

using Status = HttpRequestDecoder::Status;

net::BufferChain Chain(std::string_view bytes) {
  net::BufferChain chain;
  chain.Append(bytes);
  return chain;
}

TEST(HttpRequestDecoderTest, DecodesAGetWithQueryAndHeaders) {
  HttpRequestDecoder decoder(4096, 4096);
  net::BufferChain in =
      Chain("GET /sta%74us?format=json&x=a+b HTTP/1.1\r\nHost: h\r\nX-Custom: One\r\n\r\n");
  HttpRequest request;
  ASSERT_EQ(Status::kRequest, decoder.Next(in, &request));
  EXPECT_EQ("GET", request.method);
  EXPECT_EQ("/status", request.path);
  EXPECT_EQ("format=json&x=a+b", request.query);
  ASSERT_NE(nullptr, request.Header("x-custom"));
  EXPECT_EQ("One", *request.Header("x-custom"));
  EXPECT_TRUE(request.keep_alive);
  EXPECT_TRUE(in.empty());
  EXPECT_EQ(Status::kNeedMore, decoder.Next(in, &request));
  const auto query = ParseQuery(request.query);
  ASSERT_EQ(2u, query.size());
  EXPECT_EQ("a b", query[1].second);
}

TEST(HttpRequestDecoderTest, SplitsOriginAndAbsoluteFormTargets) {
  HttpRequestDecoder decoder(4096, 4096);
  net::BufferChain in = Chain(
      "GET http://h:80/a%20b?q=1 HTTP/1.1\r\n\r\nGET /x?y=2#frag HTTP/1.1\r\n\r\n"
      "GET /only#frag HTTP/1.1\r\n\r\n");
  HttpRequest request;
  ASSERT_EQ(Status::kRequest, decoder.Next(in, &request));
  EXPECT_EQ("/a b", request.path);
  EXPECT_EQ("q=1", request.query);
  ASSERT_EQ(Status::kRequest, decoder.Next(in, &request));
  EXPECT_EQ("/x", request.path);
  EXPECT_EQ("y=2", request.query);
  ASSERT_EQ(Status::kRequest, decoder.Next(in, &request));
  EXPECT_EQ("/only", request.path);
  EXPECT_EQ("", request.query);
}

TEST(HttpRequestDecoderTest, PipelinedRequestsComeOutOneAtATimeInOrder) {
  HttpRequestDecoder decoder(4096, 4096);
  net::BufferChain in = Chain(
      "POST /a/b HTTP/1.1\r\nContent-Length: 3\r\n\r\nonePOST /c/d HTTP/1.1\r\n"
      "Transfer-Encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\nGET /e HTTP/1.1\r\n\r\n");
  HttpRequest request;
  ASSERT_EQ(Status::kRequest, decoder.Next(in, &request));
  EXPECT_EQ("/a/b", request.path);
  EXPECT_EQ("one", request.body);
  ASSERT_EQ(Status::kRequest, decoder.Next(in, &request));
  EXPECT_EQ("/c/d", request.path);
  EXPECT_EQ("two", request.body);
  ASSERT_EQ(Status::kRequest, decoder.Next(in, &request));
  EXPECT_EQ("/e", request.path);
  EXPECT_TRUE(request.body.empty());
  EXPECT_EQ(Status::kNeedMore, decoder.Next(in, &request));
}

TEST(HttpRequestDecoderTest, ARequestArrivingByteByByteIsTakenOffTheInputAndIsInRequest) {
  HttpRequestDecoder decoder(4096, 4096);
  const std::string bytes = "POST /x/y HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
  net::BufferChain in;
  HttpRequest request;
  EXPECT_FALSE(decoder.in_request());
  for (size_t i = 0; i + 1 < bytes.size(); ++i) {
    in.Append(bytes.substr(i, 1));
    ASSERT_EQ(Status::kNeedMore, decoder.Next(in, &request)) << "after byte " << i;
    EXPECT_TRUE(in.empty());            // the raw bytes are not held
    EXPECT_TRUE(decoder.in_request());  // but a read timeout sees a request arriving
  }
  in.Append(bytes.substr(bytes.size() - 1));
  ASSERT_EQ(Status::kRequest, decoder.Next(in, &request));
  EXPECT_EQ("hello", request.body);
  EXPECT_TRUE(in.empty());
  EXPECT_FALSE(decoder.in_request());
}

// One body byte per long chunk extension: max_body_size never trips, but the raw bytes of the
// request are bounded (max_header_size + max_body_size + kRawSlackBytes), and never held.
TEST(HttpRequestDecoderTest, ChunkExtensionFloodIsBoundedByTheRawRequestLimit) {
  constexpr size_t kHeader = 1024, kBody = 4096;
  HttpRequestDecoder decoder(kHeader, kBody);
  net::BufferChain in = Chain("POST /a/b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
  HttpRequest request;
  ASSERT_EQ(Status::kNeedMore, decoder.Next(in, &request));
  const std::string chunk = "1;" + std::string(8 << 10, 'e') + "\r\nX\r\n";
  size_t fed = 0;
  Status status = Status::kNeedMore;
  while (status == Status::kNeedMore && fed < (8u << 20)) {
    in.Append(chunk);
    fed += chunk.size();
    status = decoder.Next(in, &request);
    ASSERT_LE(in.size(), chunk.size());
  }
  ASSERT_EQ(Status::kError, status);
  EXPECT_EQ(413, decoder.error_status()) << decoder.error();
  EXPECT_LE(fed, kHeader + kBody + HttpRequestDecoder::kRawSlackBytes + chunk.size());
}

TEST(HttpRequestDecoderTest, ParseQueryIsLinearInTheNumberOfKeys) {
  std::string query;
  constexpr int kKeys = 100000;
  for (int i = 0; i < kKeys; ++i) query += "k" + std::to_string(i) + "=v&";
  query += "k0=again";
  const auto start = std::chrono::steady_clock::now();
  const auto pairs = ParseQuery(query);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(static_cast<size_t>(kKeys), pairs.size());
  EXPECT_EQ("v", pairs[0].second);  // a repeated key keeps its first value
  // Quadratic, 100k distinct keys are 5e9 key comparisons (many seconds); linear, milliseconds.
  EXPECT_LT(took, std::chrono::seconds(5));
}

TEST(HttpRequestDecoderTest, Http10WithoutKeepAliveAndConnectionClose) {
  {
    HttpRequestDecoder decoder(4096, 4096);
    net::BufferChain in = Chain("GET / HTTP/1.0\r\n\r\n");
    HttpRequest request;
    ASSERT_EQ(Status::kRequest, decoder.Next(in, &request));
    EXPECT_EQ(0, request.version_minor);
    EXPECT_FALSE(request.keep_alive);
  }
  {
    HttpRequestDecoder decoder(4096, 4096);
    net::BufferChain in = Chain("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    HttpRequest request;
    ASSERT_EQ(Status::kRequest, decoder.Next(in, &request));
    EXPECT_TRUE(request.keep_alive);
  }
  {
    HttpRequestDecoder decoder(4096, 4096);
    net::BufferChain in = Chain("GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
    HttpRequest request;
    ASSERT_EQ(Status::kRequest, decoder.Next(in, &request));
    EXPECT_FALSE(request.keep_alive);
  }
}

TEST(HttpRequestDecoderTest, ExpectContinueIsReportedBeforeTheBody) {
  HttpRequestDecoder decoder(4096, 4096);
  net::BufferChain in =
      Chain("POST /a/b HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n");
  HttpRequest request;
  ASSERT_EQ(Status::kExpectContinue, decoder.Next(in, &request));
  EXPECT_EQ(Status::kNeedMore, decoder.Next(in, &request));
  in.Append("body");
  ASSERT_EQ(Status::kRequest, decoder.Next(in, &request));
  EXPECT_EQ("body", request.body);
  EXPECT_EQ("/a/b", request.path);
}

TEST(HttpRequestDecoderTest, UnknownExpectationIs417) {
  HttpRequestDecoder decoder(4096, 4096);
  net::BufferChain in = Chain("POST /a/b HTTP/1.1\r\nExpect: magic\r\nContent-Length: 4\r\n\r\n");
  HttpRequest request;
  ASSERT_EQ(Status::kError, decoder.Next(in, &request));
  EXPECT_EQ(417, decoder.error_status());
}

struct BadInput {
  const char* name;
  std::string bytes;
  int status;
};

TEST(HttpRequestDecoderTest, BadInputFailsForGoodWithItsStatus) {
  const std::vector<BadInput> cases = {
      {"garbage request line", "GET\x01/ HTTP/1.1\r\n\r\n", 400},
      {"bad version", "GET / HTTP/x.1\r\n\r\n", 400},
      {"bad Content-Length", "POST /a/b HTTP/1.1\r\nContent-Length: abc\r\n\r\n", 400},
      {"bad header byte", "GET / HTTP/1.1\r\nX\x01Y: x\r\n\r\n", 400},
      {"headers over the limit", "GET / HTTP/1.1\r\nX: " + std::string(2000, 'a') + "\r\n\r\n",
       431},
      {"long target", "GET /" + std::string(2000, 'a') + " HTTP/1.1\r\n\r\n", 431},
      {"Content-Length over max_body_size", "POST /a/b HTTP/1.1\r\nContent-Length: 1025\r\n\r\n",
       413},
      {"chunked body over max_body_size",
       "POST /a/b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n401\r\n" + std::string(1025, 'x'),
       413},
      {"bad chunk size", "POST /a/b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
      {"upgrade", "GET / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", 501},
  };
  for (const BadInput& bad : cases) {
    HttpRequestDecoder decoder(1024, 1024);
    net::BufferChain in = Chain(bad.bytes);
    HttpRequest request;
    EXPECT_EQ(Status::kError, decoder.Next(in, &request)) << bad.name;
    EXPECT_EQ(bad.status, decoder.error_status()) << bad.name << ": " << decoder.error();
    EXPECT_FALSE(decoder.error().empty()) << bad.name;
    in.Append("GET / HTTP/1.1\r\n\r\n");  // sticky: nothing more is decoded
    EXPECT_EQ(Status::kError, decoder.Next(in, &request)) << bad.name;
  }
}

TEST(HttpRequestDecoderTest, HeaderLimitCountsAcrossManySmallHeaders) {
  HttpRequestDecoder decoder(1024, 1024);
  std::string bytes = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 200; ++i) bytes += "H" + std::to_string(i) + ": v\r\n";
  net::BufferChain in = Chain(bytes);  // no end of headers: still over the bound
  HttpRequest request;
  EXPECT_EQ(Status::kError, decoder.Next(in, &request));
  EXPECT_EQ(431, decoder.error_status());
}

TEST(HttpRequestDecoderTest, PercentDecodeKeepsInvalidEscapes) {
  EXPECT_EQ("a b+c", PercentDecode("a%20b+c", false));
  EXPECT_EQ("a b c", PercentDecode("a%20b+c", true));
  EXPECT_EQ("%zz%4", PercentDecode("%zz%4", false));
}

}  // namespace
}  // namespace arenarpc::protocol
