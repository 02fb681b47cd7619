// The HTTP/2 + gRPC glue (protocol/h2) without sockets: an nghttp2 client session in the test
// exchanges bytes with GrpcServerSession. Preface recognition, the gRPC wire facts (timeouts,
// percent-encoding, brpc codes as gRPC statuses), requests and responses, and flow control tied
// to requests being handed over: the connection window reopens only as requests are popped.
#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "arenarpc/error_codes.h"
#include "protocol/h2/grpc_server_session.h"
#include "protocol/wire_protocol.h"

namespace arenarpc::protocol::h2 {
namespace {

TEST(GrpcWireTest, RecognisesTheHttp2Preface) {
  const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  EXPECT_EQ(WireProtocol::kHttp2, RecognizeProtocol(preface));
  EXPECT_EQ(WireProtocol::kHttp2, RecognizeProtocol(preface + "\0\0\0\4"));
  EXPECT_EQ(WireProtocol::kNeedMore, RecognizeProtocol(preface.substr(0, 23)));
  EXPECT_EQ(WireProtocol::kNeedMore, RecognizeProtocol("PRI"));
  EXPECT_EQ(WireProtocol::kUnknown, RecognizeProtocol("PRI * HTTP/1.1\r\n"));
  EXPECT_EQ(WireProtocol::kUnknown, RecognizeProtocol("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n"));
}

TEST(GrpcWireTest, TimeoutsStatusesAndMessages) {
  EXPECT_EQ(1500, ParseGrpcTimeoutMs("1500m"));
  EXPECT_EQ(2000, ParseGrpcTimeoutMs("2S"));
  EXPECT_EQ(120000, ParseGrpcTimeoutMs("2M"));
  EXPECT_EQ(3600000, ParseGrpcTimeoutMs("1H"));
  EXPECT_EQ(1, ParseGrpcTimeoutMs("1u"));       // rounded up
  EXPECT_EQ(1, ParseGrpcTimeoutMs("999999n"));
  EXPECT_EQ(INT32_MAX, ParseGrpcTimeoutMs("99999999H"));
  EXPECT_EQ(-1, ParseGrpcTimeoutMs("123456789S"));  // 9 digits
  EXPECT_EQ(-1, ParseGrpcTimeoutMs("10x"));
  EXPECT_EQ(-1, ParseGrpcTimeoutMs("S"));
  EXPECT_EQ("a%25b%0A%C3%A9 c", PercentEncode("a%b\n\xc3\xa9 c"));
  EXPECT_EQ("", EncodeBinaryHeader(""));  // base64 without padding, as gRPC sends -bin values
  EXPECT_EQ("Zg", EncodeBinaryHeader("f"));
  EXPECT_EQ("Zm8", EncodeBinaryHeader("fo"));
  EXPECT_EQ("Zm9v", EncodeBinaryHeader("foo"));
  EXPECT_EQ("AP/+", EncodeBinaryHeader(std::string("\0\xff\xfe", 3)));
  EXPECT_EQ(GrpcStatus::kOk, GrpcStatusForError(0));
  EXPECT_EQ(GrpcStatus::kUnimplemented, GrpcStatusForError(ENOSERVICE));
  EXPECT_EQ(GrpcStatus::kUnimplemented, GrpcStatusForError(ENOMETHOD));
  EXPECT_EQ(GrpcStatus::kInvalidArgument, GrpcStatusForError(EREQUEST));
  EXPECT_EQ(GrpcStatus::kUnavailable, GrpcStatusForError(ELIMIT));
  EXPECT_EQ(GrpcStatus::kUnavailable, GrpcStatusForError(ELOGOFF));
  EXPECT_EQ(GrpcStatus::kDeadlineExceeded, GrpcStatusForError(ERPCTIMEDOUT));
  EXPECT_EQ(GrpcStatus::kUnauthenticated, GrpcStatusForError(ERPCAUTH));
  EXPECT_EQ(GrpcStatus::kInternal, GrpcStatusForError(EINTERNAL));
  EXPECT_EQ(GrpcStatus::kInternal, GrpcStatusForError(EOVERCROWDED));
}

// An nghttp2 client session wired to a GrpcServerSession through byte buffers.
class Exchange {
 public:
  explicit Exchange(const GrpcServerSession::Limits& limits) : server_(limits) {
    nghttp2_session_callbacks* callbacks = nullptr;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, &OnHeader);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, &OnData);
    nghttp2_session_client_new(&client_, callbacks, this);
    nghttp2_session_callbacks_del(callbacks);
    nghttp2_submit_settings(client_, NGHTTP2_FLAG_NONE, nullptr, 0);
  }
  ~Exchange() { nghttp2_session_del(client_); }

  // Sends `message` (gRPC-prefixed) on a new stream; returns its id.
  int32_t Call(const std::string& message, std::vector<std::pair<std::string, std::string>> extra = {}) {
    return CallWithBody(Prefixed(message), std::move(extra));
  }
  static std::string Prefixed(const std::string& message) {
    return std::string{0, static_cast<char>(message.size() >> 24),
                       static_cast<char>(message.size() >> 16),
                       static_cast<char>(message.size() >> 8), static_cast<char>(message.size())} +
           message;
  }
  // Sends `body` (any number of gRPC-prefixed messages) on a new stream.
  int32_t CallWithBody(std::string body, std::vector<std::pair<std::string, std::string>> extra = {}) {
    std::vector<std::pair<std::string, std::string>> headers = {
        {":method", "POST"}, {":scheme", "http"}, {":path", "/a.B/C"}, {":authority", "x"},
        {"content-type", "application/grpc"}, {"te", "trailers"}};
    headers.insert(headers.end(), extra.begin(), extra.end());
    std::vector<nghttp2_nv> nv;
    for (auto& [name, value] : headers) {
      nv.push_back({reinterpret_cast<uint8_t*>(name.data()), reinterpret_cast<uint8_t*>(value.data()),
                    name.size(), value.size(), NGHTTP2_NV_FLAG_NONE});
    }
    auto owned = std::make_unique<std::string>(std::move(body));
    nghttp2_data_provider provider{};
    provider.source.ptr = owned.get();
    provider.read_callback = &ReadBody;
    const int32_t id = nghttp2_submit_request(client_, nullptr, nv.data(), nv.size(), &provider, nullptr);
    bodies_.push_back(std::move(owned));
    return id;
  }

  // Moves bytes both ways until neither side has more to say.
  void Pump() {
    for (int round = 0; round < 100; ++round) {
      bool moved = false;
      const uint8_t* data = nullptr;
      std::string to_server;
      for (ssize_t n; (n = nghttp2_session_mem_send(client_, &data)) > 0;) {
        to_server.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
      }
      if (!to_server.empty()) {
        moved = true;
        ASSERT_TRUE(server_.Receive(to_server)) << server_.error();
      }
      net::BufferChain out;
      server_.TakeOutput(&out);
      if (!out.empty()) {
        moved = true;
        const std::string bytes = out.ToString();
        ASSERT_GE(nghttp2_session_mem_recv(client_, reinterpret_cast<const uint8_t*>(bytes.data()),
                                           bytes.size()),
                  0);
      }
      if (!moved) return;
    }
  }

  // Takes stream `id`'s messages until its input ends, pumping between rounds: `each` sees every
  // message (and whether it was compressed), `after_pump` runs after each pump. Returns how many.
  int TakeMessages(int32_t id, const std::function<void(const net::BufferChain&, bool)>& each,
                   const std::function<void()>& after_pump = {}) {
    int got = 0;
    for (int round = 0; round < 100; ++round) {
      net::BufferChain message;
      bool compressed = true;
      GrpcServerSession::StreamInput input;
      while ((input = server_.PopMessage(id, &message, &compressed)) ==
             GrpcServerSession::StreamInput::kMessage) {
        each(message, compressed);
        ++got;
      }
      if (input == GrpcServerSession::StreamInput::kEnd) break;
      Pump();
      if (after_pump) after_pump();
    }
    return got;
  }

  GrpcServerSession& server() { return server_; }
  nghttp2_session* client() { return client_; }
  std::string header(int32_t stream, const std::string& name) {
    for (auto& [n, v] : headers_[stream]) {
      if (n == name) return v;
    }
    return {};
  }
  std::string data(int32_t stream) { return data_[stream]; }
  // DATA bytes the client sent (prefixes included).
  size_t sent() const { return sent_; }

 private:
  static ssize_t ReadBody(nghttp2_session*, int32_t, uint8_t* buf, size_t length,
                          uint32_t* flags, nghttp2_data_source* source, void* self) {
    auto* body = static_cast<std::string*>(source->ptr);
    const size_t n = std::min(length, body->size());
    std::copy_n(body->data(), n, buf);
    body->erase(0, n);
    if (body->empty()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    static_cast<Exchange*>(self)->sent_ += n;
    return static_cast<ssize_t>(n);
  }
  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t namelen, const uint8_t* value, size_t valuelen, uint8_t, void* self) {
    static_cast<Exchange*>(self)->headers_[frame->hd.stream_id].emplace_back(
        std::string(reinterpret_cast<const char*>(name), namelen),
        std::string(reinterpret_cast<const char*>(value), valuelen));
    return 0;
  }
  static int OnData(nghttp2_session*, uint8_t, int32_t stream, const uint8_t* data, size_t len,
                    void* self) {
    static_cast<Exchange*>(self)->data_[stream].append(reinterpret_cast<const char*>(data), len);
    return 0;
  }

  GrpcServerSession server_;
  nghttp2_session* client_ = nullptr;
  std::vector<std::unique_ptr<std::string>> bodies_;
  std::map<int32_t, std::vector<std::pair<std::string, std::string>>> headers_;
  std::map<int32_t, std::string> data_;
  size_t sent_ = 0;
};

TEST(GrpcServerSessionTest, RequestInResponseOutWithMetadataAndTrailers) {
  Exchange exchange(GrpcServerSession::Limits{});
  const int32_t id = exchange.Call("hello", {{"grpc-timeout", "250m"}, {"x-user", "7"},
                                             {"grpc-accept-encoding", "identity,gzip"}});
  exchange.Pump();
  GrpcRequest request;
  ASSERT_TRUE(exchange.server().PopRequest(&request));
  EXPECT_EQ(id, request.stream_id);
  EXPECT_EQ("/a.B/C", request.path);
  EXPECT_EQ(250, request.timeout_ms);
  EXPECT_TRUE(request.accepts_gzip);
  EXPECT_EQ("hello", request.message.ToString());
  ASSERT_EQ(1u, request.metadata.size());
  EXPECT_EQ("x-user", request.metadata[0].first);
  net::BufferChain reply;
  reply.Append("world");
  exchange.server().Respond(id, std::move(reply), false, {{"x-back", "8"}});
  exchange.Pump();
  EXPECT_EQ("200", exchange.header(id, ":status"));
  EXPECT_EQ("8", exchange.header(id, "x-back"));
  EXPECT_EQ("0", exchange.header(id, "grpc-status"));
  EXPECT_EQ(std::string("\0\0\0\0\5world", 10), exchange.data(id));
  EXPECT_EQ(0u, exchange.server().held_bytes());
  EXPECT_EQ(0u, exchange.server().open_streams());
}

TEST(GrpcServerSessionTest, MessageOverTheLimitIsRefusedFromItsPrefix) {
  GrpcServerSession::Limits limits;
  limits.max_message_bytes = 1000;
  Exchange exchange(limits);
  const int32_t id = exchange.Call(std::string(5000, 'x'));
  exchange.Pump();
  GrpcRequest request;
  EXPECT_FALSE(exchange.server().PopRequest(&request));
  EXPECT_EQ("8", exchange.header(id, "grpc-status"));  // RESOURCE_EXHAUSTED
  EXPECT_EQ(1u, exchange.server().counters().refused_streams);
}

// Request bytes that were not handed over keep stream windows closed: with requests waiting to
// be popped, a client cannot make the session hold more than the budget plus what the windows
// already open allow, however many streams it uses; and streams half-received all at once do not
// stall (the oldest one always gets its window).
TEST(GrpcServerSessionTest, StreamWindowsReopenWithinTheBudgetAndNeverStall) {
  GrpcServerSession::Limits limits;
  limits.request_bytes_budget = 100000;
  limits.stream_window = 16384;
  limits.max_message_bytes = 60000;
  Exchange exchange(limits);
  std::vector<int32_t> ids;
  constexpr int kCalls = 8;
  for (int i = 0; i < kCalls; ++i) ids.push_back(exchange.Call(std::string(50000, 'a' + i)));
  exchange.Pump();
  // Interleaved DATA of 8 streams: without the oldest stream's exception none would complete.
  GrpcRequest first;
  ASSERT_TRUE(exchange.server().PopRequest(&first));
  EXPECT_EQ(std::string(50000, 'a'), first.message.ToString());
  exchange.Pump();  // the client goes on while requests are not popped
  EXPECT_LE(exchange.sent(),
            limits.request_bytes_budget + limits.max_message_bytes + 5 +
                kCalls * size_t{limits.stream_window} + 50005);  // + the request popped
  EXPECT_LT(exchange.sent(), kCalls * 50005u);  // and it waits
  std::vector<GrpcRequest> taken;
  taken.push_back(std::move(first));
  for (int round = 0; round < 10 && taken.size() < ids.size(); ++round) {
    GrpcRequest request;
    while (exchange.server().PopRequest(&request)) taken.push_back(std::move(request));
    exchange.Pump();  // popping gave the window back: more arrives
  }
  ASSERT_EQ(ids.size(), taken.size());
  for (size_t i = 0; i < taken.size(); ++i) {
    EXPECT_EQ(std::string(50000, static_cast<char>('a' + i)), taken[i].message.ToString());
  }
}

// Stream windows larger than the budget: the connection window bounds what the session holds once
// the budget is reached, however many streams the client fills; when the client spent the
// connection window on streams other than the oldest, the newest unfinished requests are refused
// (REFUSED_STREAM: not processed) to make room, so the oldest always completes — no stall.
TEST(GrpcServerSessionTest, TheConnectionWindowBoundsLargeStreamWindows) {
  GrpcServerSession::Limits limits;
  limits.request_bytes_budget = 50000;
  limits.stream_window = 1u << 20;
  limits.connection_window = 100000;
  limits.max_message_bytes = 200000;
  Exchange exchange(limits);
  constexpr int kCalls = 20;
  std::map<int32_t, char> fill;
  for (int i = 0; i < kCalls; ++i) {
    fill[exchange.Call(std::string(150000, static_cast<char>('a' + i)))] = static_cast<char>('a' + i);
  }
  const size_t bound =
      limits.request_bytes_budget + limits.max_message_bytes + 5 + limits.connection_window;
  size_t taken = 0;
  for (int round = 0; round < 100 && taken + exchange.server().counters().refused_streams < kCalls;
       ++round) {
    exchange.Pump();
    EXPECT_LE(exchange.server().queued_request_bytes(), bound);
    GrpcRequest request;
    while (exchange.server().PopRequest(&request)) {
      ++taken;
      EXPECT_EQ(std::string(150000, fill[request.stream_id]), request.message.ToString());
    }
  }
  EXPECT_GT(exchange.sent(), bound);  // more was asked than the bound
  EXPECT_GE(taken, 1u);
  EXPECT_EQ(size_t{kCalls}, taken + exchange.server().counters().refused_streams);  // no stall
  exchange.Pump();
  EXPECT_EQ(0u, exchange.server().queued_request_bytes());
}

// Raw HTTP/2 for what an nghttp2 client will not send: frames and HPACK by hand.
std::string RawFrame(uint8_t type, uint8_t flags, uint32_t stream, std::string_view payload) {
  const auto n = static_cast<uint32_t>(payload.size());
  std::string frame = {static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                       static_cast<char>(n), static_cast<char>(type), static_cast<char>(flags),
                       static_cast<char>((stream >> 24) & 0x7f), static_cast<char>(stream >> 16),
                       static_cast<char>(stream >> 8), static_cast<char>(stream)};
  return frame + std::string(payload);
}
// A literal field with a new name (both shorter than 127 bytes, or one 4000-byte value);
// `indexed`: added to the dynamic table (index 62).
std::string RawLiteral(std::string_view name, std::string_view value, bool indexed = false) {
  std::string out(1, indexed ? '\x40' : '\x00');
  out += static_cast<char>(name.size());
  out += name;
  if (value.size() < 127) {
    out += static_cast<char>(value.size());
  } else {  // 7-bit prefix integer: 127, then the rest in 7-bit groups
    size_t rest = value.size() - 127;
    out += '\x7f';
    for (; rest >= 128; rest >>= 7) out += static_cast<char>(0x80 | (rest & 0x7f));
    out += static_cast<char>(rest);
  }
  return out + std::string(value);
}
std::string RawRequestBlock() {
  return RawLiteral(":method", "POST") + RawLiteral(":scheme", "http") +
         RawLiteral(":path", "/a.B/C") + RawLiteral(":authority", "x") +
         RawLiteral("content-type", "application/grpc");
}
// Frame types of the output, by stream; RST_STREAM as 0x300 + its error code.
std::map<uint32_t, std::vector<uint32_t>> FramesByStream(const std::string& out) {
  std::map<uint32_t, std::vector<uint32_t>> frames;
  for (size_t at = 0; at + 9 <= out.size();) {
    const auto* b = reinterpret_cast<const uint8_t*>(out.data() + at);
    const size_t length = (size_t{b[0]} << 16) | (size_t{b[1]} << 8) | b[2];
    const uint32_t stream =
        ((uint32_t{b[5]} & 0x7f) << 24) | (uint32_t{b[6]} << 16) | (uint32_t{b[7]} << 8) | b[8];
    uint32_t kind = b[3];
    if (kind == 3 && length == 4) kind = 0x300 + b[12];
    frames[stream].push_back(kind);
    at += 9 + length;
  }
  return frames;
}

// HPACK bomb: a 4 KB field indexed once, referenced 12,000 times in every HEADERS frame. Past
// max_header_list_bytes the stream is reset (ENHANCE_YOUR_CALM) and the rest of its block is skipped,
// not validated field by field: a tenth of the time of a session that takes every field.
TEST(GrpcServerSessionTest, HeaderListPastTheLimitIsCutOffWithoutDecodingTheRest) {
  constexpr int kStreams = 10;
  std::string bytes = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + RawFrame(4, 0, 0, "");
  for (int i = 0; i < kStreams; ++i) {
    // user-agent is not kept as metadata: the session that takes it all only validates it
    std::string block = RawRequestBlock();
    if (i == 0) block += RawLiteral("user-agent", std::string(4000, 'a'), /*indexed=*/true);
    block.append(12000, '\xbe');
    ASSERT_LE(block.size(), 16384u);
    bytes += RawFrame(1, 0x4 | 0x1, static_cast<uint32_t>(2 * i + 1), block);
  }
  auto timed = [&](size_t limit, GrpcServerSession::Counters* counters, std::string* out) {
    GrpcServerSession::Limits limits;
    limits.max_header_list_bytes = limit;
    GrpcServerSession session(limits);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(session.Receive(bytes)) << session.error();
    const auto took = std::chrono::steady_clock::now() - start;
    net::BufferChain output;
    session.TakeOutput(&output);
    *out = output.ToString();
    *counters = session.counters();
    return took;
  };
  GrpcServerSession::Counters cut{}, full{};
  std::string cut_out, full_out;
  const auto cut_time = timed(16u << 10, &cut, &cut_out);
  const auto full_time = timed(size_t{64} << 20, &full, &full_out);
  EXPECT_EQ(uint64_t{kStreams}, cut.header_lists_cut);
  EXPECT_EQ(uint64_t{kStreams}, cut.refused_streams);
  EXPECT_EQ(0u, cut.connection_errors);
  EXPECT_EQ(0u, full.header_lists_cut);
  const auto frames = FramesByStream(cut_out);
  for (int i = 0; i < kStreams; ++i) {  // reset ENHANCE_YOUR_CALM (RESOURCE_EXHAUSTED)
    const auto it = frames.find(static_cast<uint32_t>(2 * i + 1));
    ASSERT_NE(frames.end(), it) << i;
    EXPECT_EQ((std::vector<uint32_t>{0x300 + NGHTTP2_ENHANCE_YOUR_CALM}), it->second) << i;
  }
  EXPECT_LT(cut_time * 10, full_time)
      << std::chrono::duration_cast<std::chrono::microseconds>(cut_time).count() << " us vs "
      << std::chrono::duration_cast<std::chrono::microseconds>(full_time).count() << " us";
}

TEST(GrpcServerSessionTest, ResetStreamIsReportedCanceledAndItsReplyDropped) {
  Exchange exchange(GrpcServerSession::Limits{});
  const int32_t id = exchange.Call("x");
  exchange.Pump();
  GrpcRequest request;
  ASSERT_TRUE(exchange.server().PopRequest(&request));
  nghttp2_submit_rst_stream(exchange.client(), NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
  exchange.Pump();
  EXPECT_EQ(std::vector<int32_t>{id}, exchange.server().TakeCanceled());
  net::BufferChain reply;
  reply.Append("late");
  exchange.server().Respond(id, std::move(reply), false, {});
  exchange.Pump();
  EXPECT_TRUE(exchange.data(id).empty());
  EXPECT_EQ(0u, exchange.server().held_bytes());
}

TEST(GrpcServerSessionTest, ShutdownSendsGoawayAndStreamsInFlightFinish) {
  Exchange exchange(GrpcServerSession::Limits{});
  const int32_t id = exchange.Call("x");
  exchange.Pump();
  GrpcRequest request;
  ASSERT_TRUE(exchange.server().PopRequest(&request));
  exchange.server().Shutdown();
  exchange.Pump();
  EXPECT_FALSE(exchange.server().Finished());  // the stream taken still owes its reply
  exchange.server().Fail(id, GrpcStatus::kUnavailable, "bye");
  exchange.Pump();
  EXPECT_EQ("14", exchange.header(id, "grpc-status"));
  EXPECT_EQ("bye", exchange.header(id, "grpc-message"));
  EXPECT_TRUE(exchange.server().Finished());
}

// Streaming calls: the request goes out with its headers; the messages come one by one as they
// complete, and the stream's window reopens only while none of them waits for the call, so a
// client that streams faster than the call reads is held at one window. Responses go out message
// by message and end with trailers.
TEST(GrpcServerSessionTest, StreamingCallReadsMessagesWithinItsWindowAndWritesMessages) {
  GrpcServerSession::Limits limits;
  limits.stream_window = 16384;
  Exchange exchange(limits);
  exchange.server().set_streaming_predicate([](std::string_view path) { return path == "/a.B/C"; });
  exchange.Pump();  // the client knows the server's SETTINGS (the window) before it sends
  constexpr int kMessages = 40;
  std::string body;
  for (int i = 0; i < kMessages; ++i) body += Exchange::Prefixed(std::string(4000, 'a' + i % 26));
  const int32_t id = exchange.CallWithBody(body);
  exchange.Pump();
  GrpcRequest request;
  ASSERT_TRUE(exchange.server().PopRequest(&request));
  EXPECT_TRUE(request.streaming);
  EXPECT_EQ(id, request.stream_id);
  EXPECT_LE(exchange.sent(), limits.stream_window);  // nothing read yet: one window
  EXPECT_EQ(std::vector<int32_t>{id}, exchange.server().TakeReadable());
  int got = 0;
  exchange.TakeMessages(
      id,
      [&](const net::BufferChain& message, bool compressed) {
        EXPECT_FALSE(compressed);
        EXPECT_EQ(std::string(4000, 'a' + got % 26), message.ToString()) << got;
        ++got;
      },
      [&] {
        // read + one window (+ the part of a message that had arrived when the window reopened)
        EXPECT_LE(exchange.sent(), got * 4005u + limits.stream_window + 4005u);
      });
  EXPECT_EQ(kMessages, got);
  for (const char* reply : {"one", "two"}) {
    net::BufferChain message;
    message.Append(reply);
    ASSERT_TRUE(exchange.server().SendMessage(id, std::move(message), false, {{"x-h", "1"}}));
    exchange.Pump();
  }
  EXPECT_EQ(Exchange::Prefixed("one") + Exchange::Prefixed("two"), exchange.data(id));
  EXPECT_EQ("", exchange.header(id, "grpc-status"));  // not finished yet
  exchange.server().FinishStream(id, GrpcStatus::kOk, "", {}, {{"x-t", "2"}});
  exchange.Pump();
  EXPECT_EQ("1", exchange.header(id, "x-h"));
  EXPECT_EQ("0", exchange.header(id, "grpc-status"));
  EXPECT_EQ("2", exchange.header(id, "x-t"));
  EXPECT_FALSE(exchange.server().SendMessage(id, net::BufferChain(), false, {}));
  EXPECT_EQ(0u, exchange.server().open_streams());
  EXPECT_EQ(0u, exchange.server().held_bytes());
  EXPECT_TRUE(exchange.server().TakeCanceled().empty());
}

// Empty messages cost no payload but a queue entry each: the inbox charges each message its
// payload plus a fixed overhead and decodes only kInboxChargeBytes of charge; the others wait
// as received (5 bytes each) until the call takes messages. Nothing is lost and the charge is
// given back as they are taken.
TEST(GrpcServerSessionTest, QueuedMessagesAreChargedTheirOverhead) {
  GrpcServerSession::Limits limits;
  limits.stream_window = 16384;
  Exchange exchange(limits);
  exchange.server().set_streaming_predicate([](std::string_view) { return true; });
  exchange.Pump();
  constexpr int kMessages = 5000;  // 25,000 bytes: more than one window
  std::string body;
  for (int i = 0; i < kMessages; ++i) body += Exchange::Prefixed("");
  const int32_t id = exchange.CallWithBody(body);
  exchange.Pump();
  GrpcRequest request;
  ASSERT_TRUE(exchange.server().PopRequest(&request));
  EXPECT_LE(exchange.sent(), limits.stream_window);
  const size_t arrived = exchange.sent() / 5;  // 3,276 messages
  const size_t charged = exchange.server().queued_request_bytes();
  // The decoded ones are charged > 100 bytes each (an uncharged inbox would hold 0 here) ...
  EXPECT_GE(charged, limits.stream_window);
  // ... and at most kInboxChargeBytes of them are decoded; the rest are their 5 raw bytes.
  const size_t bound = limits.stream_window + GrpcServerSession::kInboxChargeBytes + 256;
  EXPECT_LE(charged, bound);
  EXPECT_LT(charged, arrived * 100);
  const int got = exchange.TakeMessages(id, [&](const net::BufferChain& message, bool) {
    EXPECT_TRUE(message.empty());
    EXPECT_LE(exchange.server().queued_request_bytes(), bound);
  });
  EXPECT_EQ(kMessages, got);
  EXPECT_EQ(0u, exchange.server().queued_request_bytes());
}

TEST(GrpcServerSessionTest, StreamingCallMessageOverTheLimitEndsTheCall) {
  GrpcServerSession::Limits limits;
  limits.max_message_bytes = 1000;
  Exchange exchange(limits);
  exchange.server().set_streaming_predicate([](std::string_view) { return true; });
  const int32_t id =
      exchange.CallWithBody(Exchange::Prefixed("ok") + Exchange::Prefixed(std::string(5000, 'x')));
  exchange.Pump();
  EXPECT_EQ("8", exchange.header(id, "grpc-status"));  // RESOURCE_EXHAUSTED
  EXPECT_EQ(std::vector<int32_t>{id}, exchange.server().TakeCanceled());
  GrpcRequest request;  // answered and gone before a call took it: no call
  EXPECT_FALSE(exchange.server().PopRequest(&request));
  net::BufferChain message;
  bool compressed = false;
  EXPECT_EQ(GrpcServerSession::StreamInput::kEnd,
            exchange.server().PopMessage(id, &message, &compressed));
}

}  // namespace
}  // namespace arenarpc::protocol::h2
