// HTTP responses out of a byte stream: pipelined, split at every byte, chunked, error headers,
// bodies ending at EOF, and malformed or oversized input.
#include "press/http_response_parser.h"

#include <gtest/gtest.h>

namespace arenarpc::press {
namespace {

constexpr std::string_view kOk =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n"
    "{\"message\":\"a\"}";
constexpr std::string_view kFailed =
    "HTTP/1.1 503 Service Unavailable\r\nX-Bd-Error-Code: 2004\r\n"
    "x-bd-error-message: [E2004]max concurrency reached\r\nContent-Length: 0\r\n\r\n";

TEST(HttpResponseParser, PipelinedResponsesInOneFeed) {
  HttpResponseParser parser;
  std::vector<HttpResponse> out;
  ASSERT_TRUE(parser.Feed(std::string(kOk) + std::string(kFailed) + std::string(kOk), &out))
      << parser.error();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].status, 200);
  EXPECT_EQ(out[0].body, "{\"message\":\"a\"}");
  ASSERT_NE(out[0].Header("content-type"), nullptr);
  EXPECT_EQ(*out[0].Header("content-type"), "application/json");
  EXPECT_TRUE(out[0].keep_alive);
  EXPECT_EQ(out[1].status, 503);
  ASSERT_NE(out[1].Header("x-bd-error-code"), nullptr);  // names lower-cased
  EXPECT_EQ(*out[1].Header("x-bd-error-code"), "2004");
  EXPECT_EQ(*out[1].Header("x-bd-error-message"), "[E2004]max concurrency reached");
  EXPECT_TRUE(out[1].body.empty());
  EXPECT_EQ(out[2].body, out[0].body);
  EXPECT_FALSE(parser.InsideResponse());
}

TEST(HttpResponseParser, ByteByByteGivesTheSameResponses) {
  HttpResponseParser parser;
  std::vector<HttpResponse> out;
  const std::string stream = std::string(kFailed) + std::string(kOk);
  for (size_t i = 0; i < stream.size(); ++i) {
    ASSERT_TRUE(parser.Feed(std::string_view(stream).substr(i, 1), &out)) << i;
    if (i + 1 < kFailed.size()) {
      EXPECT_TRUE(out.empty()) << i;
    }
  }
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(*out[0].Header("x-bd-error-message"), "[E2004]max concurrency reached");
  EXPECT_EQ(out[1].body, "{\"message\":\"a\"}");
}

TEST(HttpResponseParser, ChunkedBodyAndConnectionClose) {
  HttpResponseParser parser;
  std::vector<HttpResponse> out;
  ASSERT_TRUE(parser.Feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                          "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
                          &out))
      << parser.error();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].body, "hello world");
  EXPECT_FALSE(out[0].keep_alive);
}

TEST(HttpResponseParser, BodyUntilEofAndCutShortResponses) {
  HttpResponseParser parser;
  std::vector<HttpResponse> out;
  ASSERT_TRUE(parser.Feed("HTTP/1.0 200 OK\r\n\r\nuntil the end", &out));
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(parser.InsideResponse());
  ASSERT_TRUE(parser.FeedEof(&out)) << parser.error();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].body, "until the end");

  parser.Reset();
  out.clear();
  ASSERT_TRUE(parser.Feed("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", &out));
  EXPECT_FALSE(parser.FeedEof(&out));
  EXPECT_NE(parser.error().find("closed in the middle"), std::string::npos) << parser.error();
  EXPECT_TRUE(out.empty());
}

TEST(HttpResponseParser, MalformedInputFailsAndStaysFailedUntilReset) {
  HttpResponseParser parser;
  std::vector<HttpResponse> out;
  // What a baidu_std server would send: not HTTP.
  EXPECT_FALSE(parser.Feed(std::string_view("PRPC\0\0\0\x10\0\0\0\x08", 12), &out));
  EXPECT_NE(parser.error().find("invalid HTTP response"), std::string::npos) << parser.error();
  EXPECT_FALSE(parser.Feed(kOk, &out));
  EXPECT_TRUE(out.empty());
  parser.Reset();
  EXPECT_TRUE(parser.Feed(kOk, &out)) << parser.error();
  EXPECT_EQ(out.size(), 1u);

  HttpResponseParser bad_length;
  EXPECT_FALSE(bad_length.Feed("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", &out));
}

TEST(HttpResponseParser, BodyLargerThanTheLimitIsAnError) {
  HttpResponseParser parser(/*max_body_bytes=*/8);
  std::vector<HttpResponse> out;
  EXPECT_FALSE(parser.Feed("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n123456789", &out));
  EXPECT_NE(parser.error().find("larger than 8 bytes"), std::string::npos) << parser.error();
  EXPECT_TRUE(out.empty());
  HttpResponseParser fits(8);
  EXPECT_TRUE(fits.Feed("HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n12345678", &out));
  EXPECT_EQ(out.size(), 1u);
}

}  // namespace
}  // namespace arenarpc::press
