// Hostile HTTP/2 on the RPC port, from raw sockets: malformed frames of several classes, a PING
// and a SETTINGS flood from a client that never reads, an HPACK bomb, 10,000 streams opened and
// never finished, a client whose flow-control window stays 0, streaming calls whose handlers do
// not read what the client streams, idle streaming calls on many connections (the fiber
// shares), server reflection asked without reading, streams reset while their calls wait for a
// thread (rapid reset) — while a good baidu_std client on
// another connection keeps 0 errors, and the server's memory for the bad connection stays within
// the bound docs/grpc.md states.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "arenarpc/fiber.h"
#include "arenarpc/grpc_stream.h"
#include "grpc_stream_test.pb.h"
#include "process_rss.h"
#include "server_fixture.h"

namespace arenarpc::e2e {
namespace {

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
enum FrameType : uint8_t { kData = 0, kHeaders = 1, kRstStream = 3, kSettings = 4, kPing = 6,
                           kGoaway = 7, kWindowUpdate = 8 };
constexpr uint8_t kEndStream = 0x1, kEndHeaders = 0x4;

std::string Frame(uint8_t type, uint8_t flags, uint32_t stream, std::string_view payload) {
  const uint32_t n = static_cast<uint32_t>(payload.size());
  std::string frame = {static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                       static_cast<char>(n), static_cast<char>(type), static_cast<char>(flags),
                       static_cast<char>((stream >> 24) & 0x7f), static_cast<char>(stream >> 16),
                       static_cast<char>(stream >> 8), static_cast<char>(stream)};
  frame += payload;
  return frame;
}

// HPACK integer with an n-bit prefix (RFC 7541 §5.1), `first` holding the pattern bits.
std::string HpackInt(uint8_t first, int prefix_bits, size_t value) {
  const size_t max = (1u << prefix_bits) - 1;
  std::string out;
  if (value < max) {
    out += static_cast<char>(first | value);
    return out;
  }
  out += static_cast<char>(first | max);
  value -= max;
  while (value >= 128) {
    out += static_cast<char>(0x80 | (value & 0x7f));
    value >>= 7;
  }
  out += static_cast<char>(value);
  return out;
}

// A literal field, new name; `indexed`: added to the dynamic table.
std::string Literal(std::string_view name, std::string_view value, bool indexed = false) {
  std::string out = indexed ? std::string(1, '\x40') : std::string(1, '\x00');
  out += HpackInt(0, 7, name.size()) + std::string(name);
  out += HpackInt(0, 7, value.size()) + std::string(value);
  return out;
}

std::string RequestBlock(std::string_view path = "/arenarpc.e2e.TestService/Echo") {
  return Literal(":method", "POST") + Literal(":scheme", "http") +
         Literal(":path", path) + Literal(":authority", "test") +
         Literal("content-type", "application/grpc") + Literal("te", "trailers");
}

// A browser protocol's request (grpc-web, Connect) on `path` with `content_type`.
std::string WebRequestBlock(std::string_view path, std::string_view content_type) {
  return Literal(":method", "POST") + Literal(":scheme", "http") + Literal(":path", path) +
         Literal(":authority", "test") + Literal("content-type", content_type);
}

std::string GrpcMessage(const TestRequest& request) {
  const std::string bytes = request.SerializeAsString();
  const uint32_t n = static_cast<uint32_t>(bytes.size());
  std::string out = {0, static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                     static_cast<char>(n >> 8), static_cast<char>(n)};
  return out + bytes;
}

std::string Settings(std::vector<std::pair<uint16_t, uint32_t>> entries = {}) {
  std::string payload;
  for (auto [id, value] : entries) {
    payload += {static_cast<char>(id >> 8), static_cast<char>(id), static_cast<char>(value >> 24),
                static_cast<char>(value >> 16), static_cast<char>(value >> 8),
                static_cast<char>(value)};
  }
  return Frame(kSettings, 0, 0, payload);
}

// A raw HTTP/2 client: sends what the test gives, reads frames back and decodes header blocks.
class H2Socket {
 public:
  explicit H2Socket(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    EXPECT_EQ(0, ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)));
    nghttp2_hd_inflate_new(&inflater_);
  }
  ~H2Socket() {
    ::close(fd_);
    nghttp2_hd_inflate_del(inflater_);
  }

  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Sends `frame` repeatedly without reading until the socket takes no more for 200 ms or
  // `duration` passed; returns the bytes sent.
  size_t Flood(const std::string& frame, std::chrono::milliseconds duration) {
    std::string batch;
    while (batch.size() < 64 * 1024) batch += frame;
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
    size_t sent = 0;
    const auto end = std::chrono::steady_clock::now() + duration;
    auto last_progress = std::chrono::steady_clock::now();
    size_t offset = 0;
    while (std::chrono::steady_clock::now() < end) {
      const ssize_t n = ::send(fd_, batch.data() + offset, batch.size() - offset, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<size_t>(n);
        offset = (offset + static_cast<size_t>(n)) % batch.size();
        last_progress = std::chrono::steady_clock::now();
      } else if (n < 0 && errno != EAGAIN) {
        break;  // closed by the server
      } else if (std::chrono::steady_clock::now() - last_progress > std::chrono::milliseconds(200)) {
        break;  // the server stopped reading
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
    return sent;
  }

  // Reads frames until `done` says so, the server closes, or `timeout`. Returns false on timeout.
  bool ReadUntil(const std::function<bool()>& done,
                 std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
      if (closed_) return true;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char chunk[65536];
      const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
      if (n <= 0) {
        closed_ = true;
        continue;
      }
      buffer_.append(chunk, static_cast<size_t>(n));
      Parse();
    }
    return true;
  }
  bool WaitClosed(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    return ReadUntil([&] { return closed_; }, timeout) && closed_;
  }

  bool closed() const { return closed_; }
  // DATA payloads are kept per stream (data()) from now on.
  void RecordData() { record_data_ = true; }
  const std::string& data(uint32_t stream) { return data_[stream]; }
  int stream_window_updates() const { return stream_window_updates_; }
  // The connection window increments the server granted (WINDOW_UPDATE on stream 0), summed.
  uint64_t connection_window_granted() const { return connection_window_granted_; }
  int frames_of(uint8_t type) const { return counts_.count(type) ? counts_.at(type) : 0; }
  // The error code of the RST_STREAM the stream got, -1 none.
  // The error code of the GOAWAY the server sent (-1: none yet) and its debug data.
  int64_t goaway_code() const { return goaway_code_; }
  const std::string& goaway_text() const { return goaway_text_; }
  int64_t rst_code(uint32_t stream) const {
    return rst_codes_.count(stream) ? int64_t{rst_codes_.at(stream)} : -1;
  }
  // The response header fields of a stream (trailers included), in order.
  const std::vector<std::pair<std::string, std::string>>& fields(uint32_t stream) {
    return fields_[stream];
  }
  std::string field(uint32_t stream, const std::string& name) {
    for (const auto& [n, v] : fields_[stream]) {
      if (n == name) return v;
    }
    return {};
  }

 private:
  void Parse() {
    while (buffer_.size() >= 9) {
      const auto* b = reinterpret_cast<const uint8_t*>(buffer_.data());
      const size_t length = (size_t{b[0]} << 16) | (size_t{b[1]} << 8) | b[2];
      if (buffer_.size() < 9 + length) return;
      const uint8_t type = b[3];
      const uint32_t stream = ((uint32_t{b[5]} & 0x7f) << 24) | (uint32_t{b[6]} << 16) |
                              (uint32_t{b[7]} << 8) | b[8];
      ++counts_[type];
      if (type == kWindowUpdate && stream != 0) ++stream_window_updates_;
      if (type == kWindowUpdate && stream == 0 && length == 4) {
        connection_window_granted_ += ((uint32_t{b[9]} & 0x7f) << 24) | (uint32_t{b[10]} << 16) |
                                      (uint32_t{b[11]} << 8) | b[12];
      }
      if (type == kRstStream && length == 4) {
        rst_codes_[stream] = (uint32_t{b[9]} << 24) | (uint32_t{b[10]} << 16) |
                             (uint32_t{b[11]} << 8) | b[12];
      }
      if (type == kGoaway && length >= 8) {
        goaway_code_ = (uint32_t{b[13]} << 24) | (uint32_t{b[14]} << 16) |
                       (uint32_t{b[15]} << 8) | b[16];
        goaway_text_.assign(reinterpret_cast<const char*>(b + 17), length - 8);
      }
      if (type == kHeaders) Inflate(stream, b + 9, length, b[4]);
      if (type == kData && record_data_) {
        const size_t pad = (b[4] & 0x8) ? size_t{b[9]} + 1 : 0;
        data_[stream].append(reinterpret_cast<const char*>(b + 9 + (pad > 0 ? 1 : 0)),
                             length - pad);
      }
      buffer_.erase(0, 9 + length);
    }
  }
  void Inflate(uint32_t stream, const uint8_t* block, size_t length, uint8_t flags) {
    size_t pad = 0;
    if (flags & 0x8) pad = block[0], ++block, --length;
    if (flags & 0x20) block += 5, length -= 5;
    length -= pad;
    for (;;) {
      nghttp2_nv nv;
      int out_flags = 0;
      const ssize_t n = nghttp2_hd_inflate_hd2(inflater_, &nv, &out_flags, block, length, 1);
      if (n < 0) {
        ADD_FAILURE() << "bad header block from the server";
        return;
      }
      block += n;
      length -= static_cast<size_t>(n);
      if (out_flags & NGHTTP2_HD_INFLATE_EMIT) {
        fields_[stream].emplace_back(std::string(reinterpret_cast<char*>(nv.name), nv.namelen),
                                     std::string(reinterpret_cast<char*>(nv.value), nv.valuelen));
      }
      if (out_flags & NGHTTP2_HD_INFLATE_FINAL) {
        nghttp2_hd_inflate_end_headers(inflater_);
        return;
      }
      if (n == 0 && length == 0) return;
    }
  }

  int fd_ = -1;
  bool closed_ = false;
  int64_t goaway_code_ = -1;
  std::string goaway_text_;
  int stream_window_updates_ = 0;
  uint64_t connection_window_granted_ = 0;
  std::string buffer_;
  nghttp2_hd_inflater* inflater_ = nullptr;
  std::map<uint8_t, int> counts_;
  std::map<uint32_t, uint32_t> rst_codes_;
  std::map<uint32_t, std::vector<std::pair<std::string, std::string>>> fields_;
  bool record_data_ = false;
  std::map<uint32_t, std::string> data_;
};

// A streaming handler that never reads: it holds its call until the call is canceled (the
// connection closed). It looks every 50 ms: 256 such handlers polling every few milliseconds
// would take the server's threads from the good client by themselves.
void HoldWithoutReading(GrpcServerStream& stream) {
  while (!stream.controller().IsCanceled()) fiber::SleepFor(std::chrono::milliseconds(50));
}

// Every test starts a good baidu_std client, measures its unattacked p99 for half a second, then
// attacks: from then until the test ends the good client must keep >= 99 %
// OK (it keeps 0 failures) and a p99 within 5x the unattacked one (ExpectKeptUp), and the
// process's peak resident growth stays within the bound docs/grpc.md and docs/server.md state
// for `attackers_` connections with the options the test set (ProcessBound).
class GrpcHostileTest : public ServerTest {
 protected:
  void SetUp() override {
    options_.num_threads = 1;  // issue 39's rows are against a one-I/O-thread server
    options_.max_unwritten_bytes = 1u << 20;
    options_.max_queued_requests_per_connection = 64;  // SETTINGS_MAX_CONCURRENT_STREAMS
    // Small enough that the stated bound is tight next to the attacks' hundreds of MB.
    options_.max_body_size = 1u << 20;
    options_.max_queued_request_bytes = 4u << 20;
    options_.memory.reuse.max_pool_bytes = 8u << 20;
    options_.max_stream_unconsumed_bytes = 1u << 20;  // the good client's connection: no streams
  }
  void StartWithGoodClient() {
    StartServer(options_);
    StartMeasuredGoodClient();
  }
  void TearDown() override {
    if (good_) StopMeasuredGoodClient(ProcessBound());
    ServerTest::TearDown();
  }
  // The test service and `streams` (which must outlive the server: reset server_ first).
  void StartWithStreams(GrpcStreamService& streams) {
    options_.memory_mode = GetParam();
    service_ = std::make_unique<TestServiceImpl>();
    server_ = std::make_unique<Server>();
    ASSERT_EQ(0, server_->AddService(service_.get(), SERVER_DOESNT_OWN_SERVICE));
    ASSERT_EQ(0, server_->AddService(&streams, SERVER_DOESNT_OWN_SERVICE));
    ASSERT_EQ(0, server_->Start("127.0.0.1:0", options_)) << server_->last_error();
    port_ = server_->listen_port();
    StartMeasuredGoodClient();
  }
  // Stops the good client (0 failures, some calls) and the server, before `streams` goes.
  void StopWithStreams() {
    StopMeasuredGoodClient(ProcessBound());
    server_.reset();
  }
  // The process bound the docs state for `attackers_` connections (+ the good client's).
  uint64_t ProcessBound() const {
    ServerOptions options = options_;
    options.memory_mode = GetParam();
    return uint64_t(attackers_) * H2ConnectionBound(options, attack_replies_) +
           BaiduStdConnectionBound(options) + ProcessCachesBound(options, attack_fibers_);
  }
  bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }
  // A server stream (`block`: its request headers) to a client that grants a 2 GiB window and
  // never reads: the connection holds at most max_unwritten_bytes (+ the message that crossed it
  // + the last frames taken), write_timeout closes it, the handler ends.
  void PressNeverReadServerStream(const std::string& block);
  ServerOptions options_;
  int attackers_ = 1;            // connections attacking at once
  int attack_fibers_ = 2;        // handlers running at once (fiber stacks)
  uint64_t attack_replies_ = 0;  // replies of calls admitted on one attacking connection
};
INSTANTIATE_TEST_SUITE_P(Modes, GrpcHostileTest, ::testing::Values("heap", "reuse", "auto"),
                         ModeName);

std::string WindowUpdate(uint32_t stream, uint32_t increment) {
  return Frame(kWindowUpdate, 0, stream,
               std::string{static_cast<char>(increment >> 24), static_cast<char>(increment >> 16),
                           static_cast<char>(increment >> 8), static_cast<char>(increment)});
}

std::string Prefixed(const std::string& bytes) {
  const auto n = static_cast<uint32_t>(bytes.size());
  return std::string{0, static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                     static_cast<char>(n >> 8), static_cast<char>(n)} + bytes;
}

// Writes 64 KiB replies until its call is canceled.
void EndlessServerStream(GrpcServerStream& stream) {
  GrpcStreamMessages messages;
  if (!stream.Read(&messages)) return;
  for (int i = 0; !stream.controller().IsCanceled(); ++i) {
    GrpcStreamMessages reply = stream.NewMessages();
    reply.response<StreamReply>().set_index(i);
    reply.response<StreamReply>().set_payload(std::string(64u << 10, 'p'));
    if (!stream.Write(std::move(reply))) return;
  }
}

void GrpcHostileTest::PressNeverReadServerStream(const std::string& block) {
  StreamRequest request;
  request.set_text("go");
  H2Socket client(port_);
  ASSERT_TRUE(client.Send(std::string(kPreface) +
                          Settings({{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0x7fffffff}}) +
                          WindowUpdate(0, 0x7fffffff - 65535) +
                          Frame(kHeaders, kEndHeaders, 1, block) +
                          Frame(kData, kEndStream, 1, Prefixed(request.SerializeAsString()))));
  uint64_t max_held = 0;
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(800)) {
    max_held = std::max(max_held, server_->GetServerStats().unwritten_held_bytes);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::printf("[ measured ] held at most %llu KiB (max_unwritten_bytes %zu KiB)\n",
              static_cast<unsigned long long>(max_held >> 10), options_.max_unwritten_bytes >> 10);
  EXPECT_GE(max_held, options_.max_unwritten_bytes / 2);  // it did press
  EXPECT_LE(max_held, options_.max_unwritten_bytes + (256u << 10));
  EXPECT_EQ(1u, StatSoon(&ServerStats::connections_closed_write_timeout, 1));
  EXPECT_TRUE(WaitFor([&] {
    return server_->GetMethodStats("arenarpc.e2e.StreamService.ServerStream").in_flight == 0;
  }, std::chrono::seconds(5)));
}

TEST_P(GrpcHostileTest, MalformedFramesCloseOnlyTheirConnectionAndAreCounted) {
  StartWithGoodClient();
  const std::string hello = std::string(kPreface) + Settings();
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"SETTINGS of 5 bytes", hello + Frame(kSettings, 0, 0, "12345")},
      {"DATA on stream 0", hello + Frame(kData, 0, 0, "abc")},
      {"WINDOW_UPDATE of 0", hello + Frame(kWindowUpdate, 0, 0, std::string(4, '\0'))},
      {"invalid HPACK index 0", hello + Frame(kHeaders, kEndHeaders | kEndStream, 1, "\x80")},
      {"HEADERS on an even stream", hello + Frame(kHeaders, kEndHeaders, 2, RequestBlock())},
      {"bad preface", "PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n"},
  };
  const int rounds = RepeatAttack([&] {
    for (const auto& [what, bytes] : cases) {
      H2Socket bad(port_);
      ASSERT_TRUE(bad.Send(bytes)) << what;
      EXPECT_TRUE(bad.WaitClosed()) << what;
    }
  });
  const uint64_t malformed = rounds * cases.size();
  EXPECT_EQ(malformed, StatSoon(&ServerStats::malformed_frames, malformed));
}

// A client that floods frames each needing an answer and reads none: nghttp2 ends the session
// (GOAWAY ENHANCE_YOUR_CALM) when one read queues more than 1000 answers; else the answers wait
// in the connection's unsent output up to max_unwritten_bytes, then the server stops reading it.
TEST_P(GrpcHostileTest, PingAndSettingsFloodsAreBoundedByUnsentOutput) {
  // Run alone (SERIAL_TESTS): beside the release suite (load average 6-7 on 2 cores) the one
  // thread waited for a core and the good client's p99 passed its bound in 2 of 9 runs.
  StartWithGoodClient();
  RepeatAttack([&] {
    for (const std::string& frame :
         {Frame(kPing, 0, 0, "12345678"), Settings({{NGHTTP2_SETTINGS_ENABLE_PUSH, 0}})}) {
      {
        H2Socket bad(port_);
        ASSERT_TRUE(bad.Send(std::string(kPreface) + Settings()));
        const size_t sent = bad.Flood(frame, std::chrono::seconds(2));
        EXPECT_GT(sent, 64u << 10);  // it did flood
        const uint64_t held = server_->GetServerStats().unwritten_held_bytes;
        // max_unwritten_bytes, plus what one read round's answers add before reading pauses
        EXPECT_LE(held, options_.max_unwritten_bytes + (1u << 20)) << "sent " << sent;
      }
      // closed: what it held is given back before the next flood
      EXPECT_TRUE(WaitFor([&] { return server_->GetServerStats().unwritten_held_bytes == 0; },
                          std::chrono::seconds(5)));
    }
  });
}

// Thousands of references to a 4 KB dynamic-table entry: past max_http_header_size the stream is
// reset ENHANCE_YOUR_CALM (RESOURCE_EXHAUSTED to gRPC clients) at the field that passes it, the
// rest of the block is skipped, and the connection goes on.
TEST_P(GrpcHostileTest, HpackBombIsRefusedAndTheConnectionGoesOn) {
  options_.max_http_header_size = 16u << 10;
  StartWithGoodClient();
  std::string block = RequestBlock() + Literal("x-bomb", std::string(4000, 'a'), true);
  for (int i = 0; i < 12000; ++i) block += '\xbe';  // index 62: the entry above (48 MB decoded)
  std::string bytes = std::string(kPreface) + Settings();
  // One HEADERS frame (the default max frame size is 16 KiB): 4 KB entry + 12,000 references.
  ASSERT_LE(block.size(), 16384u);
  TestRequest request;
  request.set_message("after the bomb");
  bytes += Frame(kHeaders, kEndHeaders, 1, block) + Frame(kData, kEndStream, 1, GrpcMessage(request));
  bytes += Frame(kHeaders, kEndHeaders, 3, RequestBlock()) +
           Frame(kData, kEndStream, 3, GrpcMessage(request));
  RepeatAttack([&] {
    H2Socket client(port_);
    ASSERT_TRUE(client.Send(bytes));
    ASSERT_TRUE(client.ReadUntil(
        [&] { return client.rst_code(1) >= 0 && !client.field(3, "grpc-status").empty(); }));
    EXPECT_EQ(NGHTTP2_ENHANCE_YOUR_CALM, client.rst_code(1));
    EXPECT_TRUE(client.fields(1).empty());  // nothing of it was answered but the reset
    EXPECT_EQ("0", client.field(3, "grpc-status"));
    EXPECT_FALSE(client.closed());
  });
}

// 10,000 streams opened (HEADERS, no END_STREAM) and never finished: past
// SETTINGS_MAX_CONCURRENT_STREAMS they are refused (RST_STREAM), the rest hold no message bytes.
TEST_P(GrpcHostileTest, TenThousandOpenStreamsAreRefusedPastTheLimit) {
  // Run alone (SERIAL_TESTS): beside the release suite (load average 6-7 on 2 cores) the one
  // thread waited for a core and the good client's p99 passed its bound in 3 of 42 runs.
  StartWithGoodClient();
  std::string bytes = std::string(kPreface) + Settings();
  constexpr int kStreams = 10000;
  for (int i = 0; i < kStreams; ++i) {
    bytes += Frame(kHeaders, kEndHeaders, static_cast<uint32_t>(2 * i + 1), RequestBlock());
  }
  RepeatAttack([&] {
    H2Socket client(port_);
    ASSERT_TRUE(client.Send(bytes));
    const int limit = options_.max_queued_requests_per_connection;
    EXPECT_TRUE(client.ReadUntil([&] { return client.frames_of(kRstStream) >= kStreams - limit; }));
    EXPECT_EQ(kStreams - limit, client.frames_of(kRstStream));
    EXPECT_FALSE(client.closed());
  });
}

// Rapid reset: a client opens streams whose calls queue behind a slow handler on the server's one
// thread, then resets them (RST_STREAM CANCEL) before they start, round after round, reconnecting
// now and then. A call reset while queued is dropped as it reaches the thread — its handler does
// not run — and a good client on another connection keeps 0 errors.
TEST_P(GrpcHostileTest, StreamsResetBeforeTheirCallsStartDoNotRunTheirHandlers) {
  StartServer(options_);
  // Not the measured good client: this attack holds the one thread with a 50 ms handler each
  // round on purpose, so the good client's calls wait up to that long whatever the server does
  // with the resets. It must get every call answered.
  std::unique_ptr<GoodClient> good = StartGoodClient();
  TestRequest request;
  request.set_message("reset");
  request.set_block_ms(50);  // the first call of a round holds the thread while the resets come
  const std::string message = GrpcMessage(request);
  const std::string cancel("\0\0\0\x08", 4);  // RST_STREAM error code CANCEL
  constexpr int kRounds = 10, kStreamsPerRound = 32, kRoundsPerConnection = 5;
  int opened = 0;
  std::unique_ptr<H2Socket> bad;
  uint32_t next = 1;
  for (int round = 0; round < kRounds; ++round) {
    if (round % kRoundsPerConnection == 0) {
      bad = std::make_unique<H2Socket>(port_);
      ASSERT_TRUE(bad->Send(std::string(kPreface) + Settings()));
      next = 1;
    }
    std::string open, reset;
    for (int i = 0; i < kStreamsPerRound; ++i, next += 2, ++opened) {
      open += Frame(kHeaders, kEndHeaders, next, RequestBlock()) +
              Frame(kData, kEndStream, next, message);
      reset += Frame(kRstStream, 0, next, cancel);
    }
    ASSERT_TRUE(bad->Send(open));
    // The round's calls were read and admitted: one runs, the rest wait for the thread.
    EXPECT_TRUE(WaitFor(
        [&] { return server_->GetServerStats().queued >= kStreamsPerRound - 1; },
        std::chrono::seconds(5)));
    ASSERT_TRUE(bad->Send(reset));
    // The next round once these calls left the queue (run, or dropped as they reached the thread).
    EXPECT_TRUE(WaitFor(
        [&] {
          bad->ReadUntil([] { return false; }, std::chrono::milliseconds(1));  // replies, windows
          return server_->GetServerStats().queued == 0;
        },
        std::chrono::seconds(10)));
  }
  bad.reset();
  ASSERT_TRUE(WaitFor([&] { return server_->GetServerStats().in_flight == 0; },
                      std::chrono::seconds(20)));
  good->Stop();  // its calls ran the same handler: counted apart
  EXPECT_EQ(0, good->failures()) << good->last_error();
  EXPECT_GT(good->calls(), 0);
  const int reset_handlers = service_->handler_calls() - good->calls() - good->failures();
  const ServerStats stats = server_->GetServerStats();
  std::printf("%d streams opened and reset: %d of their handlers ran, %llu calls dropped at "
              "their start; good client %d calls\n",
              opened, reset_handlers, static_cast<unsigned long long>(stats.canceled_before_start),
              good->calls());
  // About one handler a round (the one running when the resets came): every one ran before.
  EXPECT_LE(reset_handlers, opened / 4);
  EXPECT_GE(stats.canceled_before_start, static_cast<uint64_t>(opened / 2));
}

// A client whose stream windows are 0 sends requests for 64 KB replies and reads nothing: the
// replies wait for a window, counted as the connection's held bytes; once they reach
// max_unwritten_bytes, more calls are refused (EOVERCROWDED) instead of held.
TEST_P(GrpcHostileTest, RepliesWaitingForAWindowAreBounded) {
  attack_replies_ = uint64_t(options_.max_queued_requests_per_connection + 2) * (64u << 10);
  StartWithGoodClient();
  std::string bytes =
      std::string(kPreface) + Settings({{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0}});
  constexpr int kCalls = 60;  // 60 x 64 KB = 3.75 MB if all were held
  TestRequest request;
  request.set_message("big");
  request.set_response_bytes(64 << 10);
  for (int i = 0; i < kCalls; ++i) {
    const auto stream = static_cast<uint32_t>(2 * i + 1);
    bytes += Frame(kHeaders, kEndHeaders, stream, RequestBlock()) +
             Frame(kData, kEndStream, stream, GrpcMessage(request));
  }
  RepeatAttack([&] {
    {
      H2Socket client(port_);
      ASSERT_TRUE(client.Send(bytes));
      // Every call is answered: headers (and a held body) or a refusal.
      ASSERT_TRUE(client.ReadUntil([&] {
        int answered = 0;
        for (int i = 0; i < kCalls; ++i) answered += !client.fields(2 * i + 1).empty();
        return answered == kCalls;
      }));
      int refused = 0;
      for (int i = 0; i < kCalls; ++i) refused += !client.field(2 * i + 1, "grpc-status").empty();
      EXPECT_GT(refused, 0);
      EXPECT_EQ("8", client.field(2 * kCalls - 1, "grpc-status"));  // RESOURCE_EXHAUSTED
      const uint64_t held = server_->GetServerStats().unwritten_held_bytes;
      EXPECT_LE(held, options_.max_unwritten_bytes + (80u << 10));  // + the reply that crossed it
      EXPECT_GE(held, 512u << 10);                                  // replies are held indeed
    }
    // closed: the replies it held are given back before the next round
    EXPECT_TRUE(WaitFor([&] { return server_->GetServerStats().unwritten_held_bytes == 0; },
                        std::chrono::seconds(5)));
  });
}

// Streaming calls whose handlers never read: each stream's window (64 KiB) is all the client may
// send; the server reopens none of them, and the connection still serves a unary call.
TEST_P(GrpcHostileTest, StreamingCallsNotReadHoldOneWindowEach) {
  GrpcStreamService streams(StreamService::descriptor());
  ASSERT_EQ(0, streams.AddMethod("ClientStream", HoldWithoutReading));
  options_.max_queued_request_bytes = 512u << 10;
  attack_fibers_ = 32;
  StartWithStreams(streams);
  {
    H2Socket client(port_);
    // SETTINGS acknowledged: no stream opens before the server's window applies
    std::string bytes = std::string(kPreface) + Settings() + Frame(kSettings, 0x1, 0, "");
    constexpr int kStreams = 32;
    const std::string block = RequestBlock("/arenarpc.e2e.StreamService/ClientStream");
    StreamRequest message;
    message.set_text(std::string(1000, 'x'));
    const std::string bytes_of = message.SerializeAsString();
    std::string data;
    while (data.size() + 5 + bytes_of.size() <= 65535) {
      const auto n = static_cast<uint32_t>(bytes_of.size());
      data += std::string{0, static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                          static_cast<char>(n >> 8), static_cast<char>(n)} + bytes_of;
    }
    for (int i = 0; i < kStreams; ++i) {
      const auto stream = static_cast<uint32_t>(2 * i + 1);
      bytes += Frame(kHeaders, kEndHeaders, stream, block);
      for (size_t at = 0; at < data.size(); at += 16384) {
        bytes += Frame(kData, 0, stream, std::string_view(data).substr(at, 16384));
      }
    }
    ASSERT_TRUE(client.Send(bytes));
    EXPECT_FALSE(client.ReadUntil([] { return false; }, std::chrono::milliseconds(500)));
    EXPECT_EQ(0, client.stream_window_updates());  // no stream may send more
    EXPECT_EQ(0, client.frames_of(kRstStream));
    // a unary call on the same connection is served
    TestRequest request;
    request.set_message("unary");
    const uint32_t unary = 2 * kStreams + 1;
    ASSERT_TRUE(client.Send(Frame(kHeaders, kEndHeaders, unary, RequestBlock()) +
                            Frame(kData, kEndStream, unary, GrpcMessage(request))));
    EXPECT_TRUE(client.ReadUntil([&] { return !client.field(unary, "grpc-status").empty(); }));
    EXPECT_EQ("0", client.field(unary, "grpc-status"));
    EXPECT_EQ(kStreams, server_->GetMethodStats("arenarpc.e2e.StreamService.ClientStream").in_flight);
  }
  // the connection closed: the handlers were canceled and ended
  for (int i = 0; i < 500 && server_->GetMethodStats(
                                 "arenarpc.e2e.StreamService.ClientStream").in_flight > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(0, server_->GetMethodStats("arenarpc.e2e.StreamService.ClientStream").in_flight);
  StopWithStreams();
}

// Server reflection asked without reading (window 0): ~1,800 requests for a file in one stream
// window would be ~2 MB of responses; the handler's writes wait once the stream holds its
// max_buffered_bytes (and the connection max_unwritten_bytes), so it stops reading and what the
// server holds stays within that bound; closing the connection frees it. The good client keeps 0
// errors meanwhile.
TEST_P(GrpcHostileTest, ReflectionAskedWithoutReadingIsBoundedByTheStreamsBuffer) {
  StartWithGoodClient();
  const std::string method = "grpc.reflection.v1.ServerReflection.ServerReflectionInfo";
  {
    H2Socket client(port_);
    // ServerReflectionRequest{file_containing_symbol (4): "arenarpc.e2e.TestService"}
    const std::string symbol = "arenarpc.e2e.TestService";
    const std::string message = Prefixed("\x22" + std::string(1, static_cast<char>(symbol.size())) +
                                         symbol);
    std::string data;
    while (data.size() + message.size() <= 65535) data += message;
    std::string bytes = std::string(kPreface) +
                        Settings({{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0}}) +
                        Frame(kHeaders, kEndHeaders, 1,
                              RequestBlock("/grpc.reflection.v1.ServerReflection/"
                                           "ServerReflectionInfo"));
    for (size_t at = 0; at < data.size(); at += 16384) {
      bytes += Frame(kData, 0, 1, std::string_view(data).substr(at, 16384));
    }
    ASSERT_TRUE(client.Send(bytes));
    const auto held = [&] { return server_->GetServerStats().unwritten_held_bytes; };
    ASSERT_TRUE(WaitFor([&] { return held() >= (512u << 10); }, std::chrono::seconds(10)))
        << held();
    std::this_thread::sleep_for(kAttackTime / 2);  // it would grow by now (and >= 100 good calls)
    EXPECT_LE(held(), options_.max_unwritten_bytes + (64u << 10));  // + the message that crossed
    std::cout << "reflection responses held for the unread stream: " << held() << " bytes\n";
    EXPECT_EQ(1, server_->GetMethodStats(method).in_flight);       // waiting, not failed
    EXPECT_EQ(0, client.frames_of(kRstStream));
  }
  // the connection closed: the handler was canceled, and what it held went
  EXPECT_TRUE(WaitFor([&] { return server_->GetMethodStats(method).in_flight == 0; },
                      std::chrono::seconds(10)));
  EXPECT_TRUE(WaitFor([&] { return server_->GetServerStats().unwritten_held_bytes < (64u << 10); },
                      std::chrono::seconds(10)))
      << server_->GetServerStats().unwritten_held_bytes;
}

// The HPACK bomb on 200 streams: each header list is cut off at the field that passes the limit
// and the rest of its block is skipped (not validated field by field), so every stream is reset
// at once and the connection goes on.
TEST_P(GrpcHostileTest, HpackBombOnManyStreamsIsCutOffAtTheLimit) {
  options_.max_http_header_size = 16u << 10;
  options_.max_queued_requests_per_connection = 256;
  StartWithGoodClient();
  std::string bytes = std::string(kPreface) + Settings();
  constexpr int kStreams = 200;
  for (int i = 0; i < kStreams; ++i) {
    std::string block = RequestBlock();
    if (i == 0) block += Literal("user-agent", std::string(4000, 'a'), true);
    block.append(12000, '\xbe');  // 48 MB of header fields per stream if decoded
    bytes += Frame(kHeaders, kEndHeaders | kEndStream, static_cast<uint32_t>(2 * i + 1), block);
  }
  TestRequest request;
  request.set_message("after the bombs");
  const uint32_t last = 2 * kStreams + 1;
  bytes += Frame(kHeaders, kEndHeaders, last, RequestBlock()) +
           Frame(kData, kEndStream, last, GrpcMessage(request));
  std::chrono::steady_clock::duration slowest{};
  const int rounds = RepeatAttack([&] {
    H2Socket client(port_);
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(client.Send(bytes));
    ASSERT_TRUE(client.ReadUntil([&] {
      return !client.field(last, "grpc-status").empty() && client.rst_code(2 * kStreams - 1) >= 0;
    }));
    const auto took = std::chrono::steady_clock::now() - start;
    for (int i = 0; i < kStreams; ++i) {
      EXPECT_EQ(NGHTTP2_ENHANCE_YOUR_CALM, client.rst_code(2 * i + 1)) << i;
    }
    EXPECT_EQ("0", client.field(last, "grpc-status"));
    EXPECT_FALSE(client.closed());
    // 9.6 GB of fields: validating them all takes seconds; cut off, well under one
    EXPECT_LT(took, std::chrono::seconds(2))
        << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
    slowest = std::max(slowest, took);
  });
  std::printf("[ measured ] %d rounds of 200 bomb streams, each reset within %lld ms\n", rounds,
              static_cast<long long>(
                  std::chrono::duration_cast<std::chrono::milliseconds>(slowest).count()));
}

// 256 streaming calls whose handlers never read, each sent one window (64 KiB) of empty
// messages (13,107 each, 16.8 MB in all): each queued message is charged its overhead and only
// one window's charge of them is decoded, so the server's memory stays near the bytes on the
// wire (it held 427 MB when the queues counted payload only).
TEST_P(GrpcHostileTest, EmptyMessagesNotReadAreChargedTheirOverhead) {
  GrpcStreamService streams(StreamService::descriptor());
  ASSERT_EQ(0, streams.AddMethod("ClientStream", HoldWithoutReading));
  options_.max_queued_requests_per_connection = 256;
  options_.max_streaming_calls_per_connection = 256;  // every stream's handler runs
  attack_fibers_ = 256;
  StartWithStreams(streams);
  constexpr int kStreams = 256;
  std::string data;
  while (data.size() + 5 <= 65535) data += Prefixed("");
  std::string bytes = std::string(kPreface) + Settings();
  const std::string block = RequestBlock("/arenarpc.e2e.StreamService/ClientStream");
  for (int i = 0; i < kStreams; ++i) {
    const auto stream = static_cast<uint32_t>(2 * i + 1);
    bytes += Frame(kHeaders, kEndHeaders, stream, block);
    for (size_t at = 0; at < data.size(); at += 16384) {
      bytes += Frame(kData, 0, stream, std::string_view(data).substr(at, 16384));
    }
  }
  const uint64_t rss_before = RssBytes();
  ResetPeakRss();
  {
    H2Socket client(port_);
    ASSERT_TRUE(client.Send(bytes));
    bytes.clear();
    bytes.shrink_to_fit();
    const std::string method = "arenarpc.e2e.StreamService.ClientStream";
    EXPECT_TRUE(WaitFor([&] { return server_->GetMethodStats(method).in_flight == kStreams; },
                        std::chrono::seconds(5)));
    EXPECT_FALSE(client.ReadUntil([] { return false; }, std::chrono::milliseconds(300)));
    EXPECT_EQ(0, client.frames_of(kRstStream));
    EXPECT_FALSE(client.closed());
    const uint64_t growth = PeakRssBytes() - std::min(rss_before, PeakRssBytes());
    std::printf("[ measured ] peak RSS growth %llu MiB for 16.8 MB of empty messages\n",
                static_cast<unsigned long long>(growth >> 20));
    if (kMeasuresRss) {
      // one window raw + one window of charge per stream: 256 x 128 KiB = 32 MiB, plus pages
      EXPECT_LT(growth, uint64_t{96} << 20) << (growth >> 20) << " MiB";
    }
  }
  EXPECT_TRUE(WaitFor([&] {
    return server_->GetMethodStats("arenarpc.e2e.StreamService.ClientStream").in_flight == 0;
  }, std::chrono::seconds(5)));
  StopWithStreams();
}

// Server streaming to a client that grants a 2 GiB window and never reads: frames leave the
// session only while the connection holds less than max_unwritten_bytes, the writer waits at
// that bound, and write_timeout closes the connection (it held 2.37 GB before).
TEST_P(GrpcHostileTest, HugeWindowNeverReadIsBoundedByUnwrittenBytes) {
  GrpcStreamService streams(StreamService::descriptor());
  ASSERT_EQ(0, streams.AddMethod("ServerStream", EndlessServerStream));
  options_.write_timeout = std::chrono::milliseconds(1000);
  attack_replies_ = 64u << 10;  // the message that crosses the bound
  StartWithStreams(streams);
  const uint64_t rss_before = RssBytes();
  ResetPeakRss();
  PressNeverReadServerStream(RequestBlock("/arenarpc.e2e.StreamService/ServerStream"));
  const uint64_t growth = PeakRssBytes() - std::min(rss_before, PeakRssBytes());
  std::printf("[ measured ] peak RSS growth %llu MiB\n",
              static_cast<unsigned long long>(growth >> 20));
  if (kMeasuresRss) {
    EXPECT_LT(growth, uint64_t{64} << 20) << (growth >> 20) << " MiB";
  }
  StopWithStreams();
}

// The browsers' protocols on the HTTP/2 path, hostile: grpc-web-text base64 garbage, a Connect
// unary body past max_body_size, grpc-web-text past its base64 bound, a Connect streaming
// envelope whose length lies, each answered with its error on one connection; and a Connect
// server stream to a client that grants a 2 GiB window and never reads, bounded by
// max_unwritten_bytes and closed by write_timeout — while the good client keeps 0 errors and
// the process stays within the stated bound.
TEST_P(GrpcHostileTest, BrowserProtocolsHostileInputOverHttp2) {
  GrpcStreamService streams(StreamService::descriptor());
  ASSERT_EQ(0, streams.AddMethod("ServerStream", EndlessServerStream));
  options_.write_timeout = std::chrono::milliseconds(1000);
  attack_replies_ = 64u << 10;
  StartWithStreams(streams);
  constexpr std::string_view kEcho = "/arenarpc.e2e.TestService/Echo";
  constexpr std::string_view kStream = "/arenarpc.e2e.StreamService/ServerStream";
  H2Socket bad(port_);
  bad.RecordData();
  std::string lie = Prefixed("xyz");
  lie[1] = lie[2] = lie[3] = lie[4] = '\xff';
  const std::string over_limit(options_.max_body_size + 1, 'j');
  std::string attack = std::string(kPreface) + Settings() +
      Frame(kHeaders, kEndHeaders, 1, WebRequestBlock(kEcho, "application/grpc-web-text")) +
      Frame(kData, kEndStream, 1, std::string(4000, 'A') + "!@#$AA=A") +
      Frame(kHeaders, kEndHeaders, 3, WebRequestBlock(kStream, "application/connect+proto")) +
      Frame(kData, kEndStream, 3, lie);
  for (uint32_t id : {5u, 7u}) {  // past max_body_size: Connect unary, then grpc-web-text
    attack += Frame(kHeaders, kEndHeaders, id,
                    WebRequestBlock(kEcho, id == 5 ? "application/proto" : "application/grpc-web-text"));
    const std::string body = id == 5 ? over_limit : std::string(over_limit.size() * 4 / 3 + 2048, 'A');
    for (size_t at = 0; at < body.size(); at += 16384) {
      const bool last = at + 16384 >= body.size();
      attack += Frame(kData, last ? kEndStream : 0, id, std::string_view(body).substr(at, 16384));
    }
  }
  ASSERT_TRUE(bad.Send(attack));
  ASSERT_TRUE(bad.ReadUntil([&] {
    return !bad.field(1, "grpc-status").empty() && !bad.field(5, ":status").empty() &&
           !bad.field(7, "grpc-status").empty() && bad.data(3).size() > 5;
  }));
  EXPECT_EQ("3", bad.field(1, "grpc-status"));
  EXPECT_EQ(0u, bad.field(1, "grpc-message").find("grpc-web-text body is not base64 (at byte 4000)"))
      << bad.field(1, "grpc-message");
  EXPECT_EQ("application/grpc-web-text+proto", bad.field(1, "content-type"));
  EXPECT_EQ("200", bad.field(3, ":status"));
  EXPECT_NE(std::string::npos, bad.data(3).find(
      R"({"error":{"code":"resource_exhausted","message":"gRPC message of 4294967295 bytes)"))
      << bad.data(3);
  EXPECT_EQ(2, bad.data(3)[0]) << "Connect's end-of-stream envelope";
  EXPECT_EQ("429", bad.field(5, ":status"));
  EXPECT_EQ("application/json", bad.field(5, "content-type"));
  EXPECT_EQ(0u, bad.data(5).find(R"({"code":"resource_exhausted","message":"request body of more than )"))
      << bad.data(5);
  EXPECT_EQ("8", bad.field(7, "grpc-status"));
  EXPECT_FALSE(bad.closed()) << "stream errors, not connection errors";
  // A Connect server stream whose client never reads.
  PressNeverReadServerStream(WebRequestBlock(kStream, "application/connect+proto"));
  StopWithStreams();
}

// Replies held behind windows that never open, issue 39's row: 8 connections with window 0
// asking for 24 MiB replies the handler marks gzip (they held 506 MB and never timed out), then
// 8 asking for 4 MiB replies sent as they are. The replies are held (counted in
// unwritten_held_bytes), the flow-control stall runs the write_timeout clock, each connection is
// closed and what it held given back; the process stays within the stated bound.
TEST_P(GrpcHostileTest, RepliesHeldBehindAClosedWindowTimeOut) {
  // One I/O thread, handlers on a pool larger than the 8 handlers that run at once: each builds
  // and gzips a 24 MiB reply without a fiber wait, and a good call queued behind them on the
  // I/O thread, or behind a busy pool, waits for them (docs/server.md, "Handlers that compute
  // for long", has the measurements).
  options_.worker_threads = 16;
  options_.write_timeout = std::chrono::milliseconds(500);
  options_.max_unwritten_bytes = 16u << 20;
  constexpr int kConnections = 8;
  attackers_ = kConnections;
  // A reply is the handler's: the 24 MiB message, and its serialized bytes while they are
  // compressed (held replies are the compressed ones, within max_unwritten_bytes).
  attack_replies_ = 2 * (24u << 20);
  StartWithGoodClient();
  struct Attack {
    int reply_bytes;
    bool gzip;
    uint64_t held_at_least;  // all 8 replies held before the timeout (release builds)
  };
  for (const Attack& attack : {Attack{24 << 20, true, 8 * (16u << 10)},
                               Attack{4 << 20, false, 4u << 20}}) {
    const std::string what = std::to_string(attack.reply_bytes >> 20) + " MiB replies" +
                             (attack.gzip ? " gzip" : "");
    const uint64_t closed_before = server_->GetServerStats().connections_closed_write_timeout;
    std::vector<std::unique_ptr<H2Socket>> clients;
    TestRequest request;
    request.set_message("big");
    request.set_response_bytes(attack.reply_bytes);
    if (attack.gzip) request.set_response_compress(static_cast<int>(CompressType::kGzip));
    const std::string block =
        attack.gzip ? RequestBlock() + Literal("grpc-accept-encoding", "gzip") : RequestBlock();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kConnections; ++i) {
      clients.push_back(std::make_unique<H2Socket>(port_));
      ASSERT_TRUE(clients.back()->Send(
          std::string(kPreface) + Settings({{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0}}) +
          Frame(kHeaders, kEndHeaders, 1, block) +
          Frame(kData, kEndStream, 1, GrpcMessage(request))));
    }
    // Sanitizer builds make and gzip the replies slower than write_timeout closes the first
    // connections (TSan: the 8th gzip'd reply was ready 4.8 s after the first): there not all 8
    // are held at once, and one eighth of the bytes is asserted.
    const uint64_t held_at_least =
        kWaitScale > 1 ? attack.held_at_least / kConnections : attack.held_at_least;
    uint64_t max_held = 0;
    WaitFor([&] {
      max_held = std::max(max_held, server_->GetServerStats().unwritten_held_bytes);
      return max_held >= held_at_least;
    }, kWaitScale * std::chrono::seconds(3));
    EXPECT_GE(max_held, held_at_least) << what << ": the replies are held indeed";
    EXPECT_LE(max_held, kConnections * (options_.max_unwritten_bytes + (64u << 10))) << what;
    for (auto& client : clients) {
      EXPECT_TRUE(client->WaitClosed(kWaitScale * std::chrono::seconds(5))) << what;
      EXPECT_EQ(attack.gzip ? "gzip" : "", client->field(1, "grpc-encoding")) << what;
    }
    const auto took = std::chrono::steady_clock::now() - start;
    std::printf("[ measured ] %d stalled connections (%s) held at most %llu KiB, closed after "
                "%lld ms\n", kConnections, what.c_str(),
                static_cast<unsigned long long>(max_held >> 10),
                static_cast<long long>(
                    std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
    EXPECT_GE(took, std::chrono::milliseconds(options_.write_timeout)) << what;
    EXPECT_EQ(closed_before + kConnections,
              StatSoon(&ServerStats::connections_closed_write_timeout,
                       closed_before + kConnections)) << what;
    EXPECT_TRUE(WaitFor([&] { return server_->GetServerStats().unwritten_held_bytes == 0; },
                        kWaitScale * std::chrono::seconds(3))) << what;
  }
}

// 200 requests of 15 KiB sent in one write: nghttp2 gets 64 KiB of a connection's input per turn
// of the I/O loop, and the rest waits (unread) behind the other connections' work; every request
// is still decoded and answered.
TEST_P(GrpcHostileTest, InputLargerThanOneTurnIsDecodedOverSeveralTurns) {
  options_.max_queued_requests_per_connection = 256;
  StartWithGoodClient();
  std::string bytes = std::string(kPreface) + Settings();
  constexpr int kCalls = 200;
  TestRequest request;
  request.set_message(std::string(15u << 10, 'm'));  // one DATA frame each (16 KiB at most)
  request.set_response_bytes(1);  // the replies fit the client's 64 KiB connection window
  for (int i = 0; i < kCalls; ++i) {
    const auto stream = static_cast<uint32_t>(2 * i + 1);
    bytes += Frame(kHeaders, kEndHeaders, stream, RequestBlock()) +
             Frame(kData, kEndStream, stream, GrpcMessage(request));
  }
  ASSERT_GT(bytes.size(), 3000u << 10);  // about 47 turns' worth
  // Repeated for kAttackTime: 200 calls of 15 KiB a round, a new connection each. (`reuse` once
  // grew its peak RSS by ~3 MiB a round here, without bound: the request's `required string`,
  // cleared by reflection on a pooled object's arena, stayed on the arena with its buffer until
  // the arena died. KeptTreePlan now erases strings without presence in place and counts those it
  // lets go in the object's size.)
  RepeatAttack([&] {
    H2Socket client(port_);
    ASSERT_TRUE(client.Send(bytes));
    ASSERT_TRUE(client.ReadUntil([&] {
      for (int i = 0; i < kCalls; ++i) {
        if (client.field(2 * i + 1, "grpc-status").empty()) return false;
      }
      return true;
    }));
    for (int i = 0; i < kCalls; ++i) EXPECT_EQ("0", client.field(2 * i + 1, "grpc-status")) << i;
    EXPECT_FALSE(client.closed());
  });
}

// Frames that carry no work, each kind the issue lists on its own connection: WINDOW_UPDATE(+1)
// on the connection, empty DATA on an open stream, PING, SETTINGS and RST_STREAM (on a stream
// already reset). Past the limits docs/server.md states (1 empty DATA in a row; 1000 control
// frames a second + 10 per frame of work) the connection gets GOAWAY ENHANCE_YOUR_CALM and is
// closed, each counted in malformed_frames; below them (500 control frames in
// one write) it goes on. The good client on its own connection sees nothing.
TEST_P(GrpcHostileTest, FloodsOfFramesWithoutWorkCloseTheConnection) {
  StartWithGoodClient();
  const std::string cancel("\0\0\0\x08", 4);  // RST_STREAM error code CANCEL
  struct Flood {
    const char* what;
    std::string frame;
    bool control;  // counted against the control frames' rate (else: empty DATA in a row)
  };
  const std::vector<Flood> floods = {
      {"WINDOW_UPDATE(+1)", WindowUpdate(0, 1), true},
      {"empty DATA", Frame(kData, 0, 1, ""), false},
      {"PING", Frame(kPing, 0, 0, "12345678"), true},
      {"SETTINGS", Settings({{NGHTTP2_SETTINGS_ENABLE_PUSH, 0}}), true},
      {"RST_STREAM", Frame(kRstStream, 0, 1, cancel), true},
  };
  constexpr int kBelowTheRate = 500;
  std::map<std::string, std::chrono::steady_clock::duration> slowest;
  uint64_t malformed = 0;
  const int rounds = RepeatAttack([&] {
    for (const Flood& flood : floods) {
      H2Socket bad(port_);
      std::string hello = std::string(kPreface) + Settings() +
                          Frame(kHeaders, kEndHeaders, 1, RequestBlock());
      if (flood.frame.substr(3, 1)[0] == kRstStream) hello += Frame(kRstStream, 0, 1, cancel);
      ASSERT_TRUE(bad.Send(hello));
      if (flood.control) {  // below the rate: the connection goes on
        std::string below;
        for (int i = 0; i < kBelowTheRate; ++i) below += flood.frame;
        ASSERT_TRUE(bad.Send(below));
        bad.ReadUntil([] { return false; }, std::chrono::milliseconds(20));
        EXPECT_FALSE(bad.closed()) << flood.what << " x " << kBelowTheRate;
        EXPECT_EQ(-1, bad.goaway_code()) << flood.what << ": " << bad.goaway_text();
      }
      const auto start = std::chrono::steady_clock::now();
      const size_t sent = bad.Flood(flood.frame, std::chrono::seconds(3));
      EXPECT_TRUE(bad.WaitClosed(std::chrono::seconds(3))) << flood.what;
      const auto took = std::chrono::steady_clock::now() - start;
      EXPECT_LT(took, std::chrono::seconds(3)) << flood.what << " after " << sent << " bytes";
      EXPECT_EQ(NGHTTP2_ENHANCE_YOUR_CALM, bad.goaway_code()) << flood.what;
      ++malformed;
      EXPECT_EQ(malformed, StatSoon(&ServerStats::malformed_frames, malformed)) << flood.what;
      slowest[flood.what] = std::max(slowest[flood.what], took);  // closed, not the flood's end
    }
  });
  for (const auto& [what, took] : slowest) {
    std::printf("[ measured ] %d %s floods, each closed within %lld ms\n", rounds, what.c_str(),
                static_cast<long long>(
                    std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
  }
}


// A client-streaming handler that waits for messages until the client ends its side (or the call
// is canceled); idle streams keep it waiting in Read().
void ReadUntilTheClientEnds(GrpcServerStream& stream) {
  GrpcStreamMessages messages;
  while (stream.Read(&messages)) {
  }
}

// Opens `calls` client-streaming calls on a new connection (stream ids 1, 3, ...); `end`: each
// also sends one empty message and ends its side, else the calls stay open and idle.
std::unique_ptr<H2Socket> OpenClientStreams(int port, int calls, bool end) {
  auto socket = std::make_unique<H2Socket>(port);
  std::string bytes = std::string(kPreface) + Settings();
  const std::string block = RequestBlock("/arenarpc.e2e.StreamService/ClientStream");
  for (int i = 0; i < calls; ++i) {
    const auto stream = static_cast<uint32_t>(2 * i + 1);
    bytes += Frame(kHeaders, kEndHeaders, stream, block);
    if (end) bytes += Frame(kData, kEndStream, stream, std::string(5, '\0'));  // empty message
  }
  EXPECT_TRUE(socket->Send(bytes));
  return socket;
}

// Reads all `sockets` until `done` or `timeout`.
bool ReadAllUntil(const std::vector<std::unique_ptr<H2Socket>>& sockets,
                  const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    for (const auto& socket : sockets) {
      socket->ReadUntil([] { return false; }, std::chrono::milliseconds(5));
    }
  }
  return true;
}

// Streams of the first `calls` stream ids whose grpc-status is `status`.
int CountStatus(const std::vector<std::unique_ptr<H2Socket>>& sockets, int calls,
                const std::string& status, const std::string& message_part = "") {
  int n = 0;
  for (const auto& socket : sockets) {
    for (int i = 0; i < calls; ++i) {
      const auto stream = static_cast<uint32_t>(2 * i + 1);
      if (socket->field(stream, "grpc-status") == status &&
          socket->field(stream, "grpc-message").find(message_part) != std::string::npos) {
        ++n;
      }
    }
  }
  return n;
}

// Issue 39's attack scaled down: 20 connections x 20 idle client-streaming calls against
// max_fibers=256. Streaming handlers hold at most max_streaming_fibers (max_fibers / 2) fibers;
// the rest are refused RESOURCE_EXHAUSTED, and the good baidu_std client keeps the unary half.
// Once the attackers close, the whole streaming share serves calls again.
TEST_P(GrpcHostileTest, IdleStreamingCallsLeaveTheUnaryFibers) {
  GrpcStreamService streams(StreamService::descriptor());
  ASSERT_EQ(0, streams.AddMethod("ClientStream", ReadUntilTheClientEnds));
  options_.max_fibers = 256;
  constexpr int kShare = 128;  // max_streaming_fibers' default: max_fibers / 2
  constexpr int kConnections = 20, kCalls = 20;
  attackers_ = kConnections;
  attack_fibers_ = kShare + 2;
  StartWithStreams(streams);
  const std::string method = "arenarpc.e2e.StreamService.ClientStream";
  {
    std::vector<std::unique_ptr<H2Socket>> attackers;
    for (int c = 0; c < kConnections; ++c) {
      attackers.push_back(OpenClientStreams(port_, kCalls, /*end=*/false));
    }
    constexpr int kRefused = kConnections * kCalls - kShare;
    EXPECT_TRUE(ReadAllUntil(
        attackers, [&] { return CountStatus(attackers, kCalls, "8") >= kRefused; },
        std::chrono::seconds(10)));
    EXPECT_EQ(kRefused, CountStatus(attackers, kCalls, "8", "max_streaming_fibers=128"));
    EXPECT_EQ(kShare, server_->GetMethodStats(method).in_flight);
    // the attack holds its share while the good client calls on
    const int calls_before = good_->calls(), failures_before = good_->failures();
    ReadAllUntil(attackers, [] { return false; }, std::chrono::seconds(1));
    const int good_calls = good_->calls() - calls_before;
    const int good_failures = good_->failures() - failures_before;
    std::printf("[ measured ] under attack: %d streaming calls held, %d refused; good client "
                "%d ok, %d failed in 1 s\n",
                static_cast<int>(server_->GetMethodStats(method).in_flight),
                CountStatus(attackers, kCalls, "8"), good_calls, good_failures);
    EXPECT_GE(good_calls, 50);
    EXPECT_EQ(0, good_failures) << good_->last_error();
    EXPECT_EQ(kShare, server_->GetMethodStats(method).in_flight);
  }
  EXPECT_TRUE(WaitFor([&] { return server_->GetMethodStats(method).in_flight == 0; },
                      std::chrono::seconds(5)));
  // the attackers' share is free again: 4 x 32 streaming calls that end at once all succeed
  constexpr int kAfterConnections = 4, kAfterCalls = kShare / kAfterConnections;
  std::vector<std::unique_ptr<H2Socket>> after;
  for (int c = 0; c < kAfterConnections; ++c) {
    after.push_back(OpenClientStreams(port_, kAfterCalls, /*end=*/true));
  }
  EXPECT_TRUE(ReadAllUntil(
      after, [&] { return CountStatus(after, kAfterCalls, "0") == kShare; },
      std::chrono::seconds(10)));
  EXPECT_EQ(kShare, CountStatus(after, kAfterCalls, "0"));
  after.clear();
  StopWithStreams();
}

// max_streaming_calls_per_connection: one connection's streaming calls past it are refused
// RESOURCE_EXHAUSTED naming the option, while another connection still gets its own share.
TEST_P(GrpcHostileTest, StreamingCallsPastTheConnectionsShareAreRefused) {
  GrpcStreamService streams(StreamService::descriptor());
  ASSERT_EQ(0, streams.AddMethod("ClientStream", ReadUntilTheClientEnds));
  options_.max_streaming_calls_per_connection = 10;
  attackers_ = 2;
  attack_fibers_ = 20;
  StartWithStreams(streams);
  const std::string method = "arenarpc.e2e.StreamService.ClientStream";
  {
    constexpr int kCalls = 30;
    std::vector<std::unique_ptr<H2Socket>> first;
    first.push_back(OpenClientStreams(port_, kCalls, /*end=*/false));
    EXPECT_TRUE(ReadAllUntil(
        first, [&] { return CountStatus(first, kCalls, "8") >= kCalls - 10; },
        std::chrono::seconds(10)));
    EXPECT_EQ(kCalls - 10,
              CountStatus(first, kCalls, "8", "max_streaming_calls_per_connection=10"));
    std::vector<std::unique_ptr<H2Socket>> second;
    second.push_back(OpenClientStreams(port_, 10, /*end=*/false));
    EXPECT_TRUE(WaitFor([&] { return server_->GetMethodStats(method).in_flight == 20; },
                        std::chrono::seconds(5)));
    // Both hold their shares for half the attack time: the second is never refused.
    EXPECT_FALSE(ReadAllUntil(
        second, [&] { return CountStatus(second, 10, "8") > 0; }, kAttackTime / 2));
  }
  EXPECT_TRUE(WaitFor([&] { return server_->GetMethodStats(method).in_flight == 0; },
                      std::chrono::seconds(5)));
  StopWithStreams();
}

// stream_idle_timeout: client-streaming calls whose clients send nothing are ended
// DEADLINE_EXCEEDED naming the option once a handler waited that long in Read(), and their
// fibers and per-connection slots are free again; a streaming call whose client sends a message
// more often than that goes on and ends OK; the good client keeps 0 errors meanwhile.
TEST_P(GrpcHostileTest, IdleStreamingCallsAreEndedAfterTheStreamIdleTimeout) {
  GrpcStreamService streams(StreamService::descriptor());
  ASSERT_EQ(0, streams.AddMethod("ClientStream", ReadUntilTheClientEnds));
  options_.stream_idle_timeout = std::chrono::milliseconds(300);
  constexpr int kConnections = 4, kCalls = 20;
  attackers_ = kConnections + 1;
  attack_fibers_ = kConnections * kCalls + 2;
  StartWithStreams(streams);
  const std::string method = "arenarpc.e2e.StreamService.ClientStream";
  std::vector<std::unique_ptr<H2Socket>> idle;
  for (int c = 0; c < kConnections; ++c) {
    idle.push_back(OpenClientStreams(port_, kCalls, /*end=*/false));
  }
  // A busy client-streaming call on its own connection: an empty message every 100 ms for
  // 1.2 s (4 timeouts' worth), then the end of its side.
  std::vector<std::unique_ptr<H2Socket>> busy;
  busy.push_back(OpenClientStreams(port_, 1, /*end=*/false));
  const auto started = std::chrono::steady_clock::now();
  const auto all_ended = [&] { return CountStatus(idle, kCalls, "4") == kConnections * kCalls; };
  std::chrono::steady_clock::duration took{};
  for (int i = 0; i < 12; ++i) {
    ReadAllUntil(idle, [] { return false; }, std::chrono::milliseconds(100));
    const auto elapsed = std::chrono::steady_clock::now() - started;
    if (elapsed < std::chrono::milliseconds(250)) {  // not before the timeout
      EXPECT_EQ(0, CountStatus(idle, kCalls, "4"));
    }
    if (took == took.zero() && all_ended()) took = elapsed;
    ASSERT_TRUE(busy[0]->Send(Frame(kData, 0, 1, std::string(5, '\0'))));
  }
  ASSERT_TRUE(busy[0]->Send(Frame(kData, kEndStream, 1, std::string(5, '\0'))));
  EXPECT_TRUE(ReadAllUntil(idle, all_ended, std::chrono::seconds(10)));
  if (took == took.zero()) took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(kConnections * kCalls,
            CountStatus(idle, kCalls, "4", "stream_idle_timeout=300ms"));
  EXPECT_TRUE(ReadAllUntil(
      busy, [&] { return !busy[0]->field(1, "grpc-status").empty(); }, std::chrono::seconds(5)));
  EXPECT_EQ("0", busy[0]->field(1, "grpc-status")) << busy[0]->field(1, "grpc-message");
  EXPECT_TRUE(WaitFor([&] { return server_->GetMethodStats(method).in_flight == 0; },
                      std::chrono::seconds(5)));
  std::printf("[ measured ] %d idle streaming calls ended by the idle timeout (300 ms), all "
              "within %lld ms of their opening\n",
              kConnections * kCalls,
              static_cast<long long>(
                  std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
  // The idle connections' slots are free again: the same connections open new calls that end.
  for (auto& socket : idle) {
    std::string bytes;
    const std::string block = RequestBlock("/arenarpc.e2e.StreamService/ClientStream");
    for (int i = 0; i < kCalls; ++i) {
      const auto stream = static_cast<uint32_t>(2 * (kCalls + i) + 1);
      bytes += Frame(kHeaders, kEndHeaders, stream, block) +
               Frame(kData, kEndStream, stream, std::string(5, '\0'));
    }
    ASSERT_TRUE(socket->Send(bytes));
  }
  const auto ended_ok = [&] {
    int n = 0;
    for (auto& socket : idle) {
      for (int i = 0; i < kCalls; ++i) {
        n += socket->field(static_cast<uint32_t>(2 * (kCalls + i) + 1), "grpc-status") == "0";
      }
    }
    return n;
  };
  EXPECT_TRUE(ReadAllUntil(idle, [&] { return ended_ok() == kConnections * kCalls; },
                           std::chrono::seconds(10)));
  idle.clear();
  busy.clear();
  StopWithStreams();
}


// brpc's h2:grpc client sends a message in one go, never waiting for a WINDOW_UPDATE (and
// assumes a large window before SETTINGS): a 1 MiB request sent with the preface, before any
// frame of the server was read, fits the stream window the server opens and succeeds.
TEST_P(GrpcHostileTest, OneMebibyteRequestSentWithoutWaitingForWindowsSucceeds) {
  options_.max_body_size = 2u << 20;
  StartWithGoodClient();
  TestRequest request;
  request.set_message("big");
  request.add_ballast(std::string(1u << 20, 'b'));  // held, not echoed: the reply stays small
  const std::string message = GrpcMessage(request);
  ASSERT_GT(message.size(), 1u << 20);
  std::string bytes = std::string(kPreface) + Settings() +
                      Frame(kHeaders, kEndHeaders, 1, RequestBlock());
  for (size_t at = 0; at < message.size(); at += 16384) {
    const bool last = at + 16384 >= message.size();
    bytes += Frame(kData, last ? kEndStream : 0, 1, std::string_view(message).substr(at, 16384));
  }
  const int rounds = RepeatAttack([&] {  // long enough for the good client's measure
    H2Socket client(port_);
    ASSERT_TRUE(client.Send(bytes));
    ASSERT_TRUE(client.ReadUntil([&] { return !client.field(1, "grpc-status").empty(); }));
    EXPECT_EQ("0", client.field(1, "grpc-status")) << client.field(1, "grpc-message");
    EXPECT_EQ("identity,deflate,gzip", client.field(1, "grpc-accept-encoding"));
    EXPECT_EQ(0, client.frames_of(kRstStream));
    EXPECT_FALSE(client.closed());
  });
  EXPECT_GE(rounds, 1);
}

// A request compressed with an encoding the server does not take: UNIMPLEMENTED, with the
// encodings it does take in grpc-accept-encoding (gRPC's compression spec).
TEST_P(GrpcHostileTest, UnknownRequestEncodingIsUnimplementedWithTheAcceptedOnes) {
  StartServer(options_);  // one request: no attack to measure a good client against
  const std::string block = RequestBlock() + Literal("grpc-encoding", "br");
  H2Socket client(port_);
  ASSERT_TRUE(client.Send(std::string(kPreface) + Settings() +
                          Frame(kHeaders, kEndHeaders, 1, block) +
                          Frame(kData, kEndStream, 1, std::string("\x01\0\0\0\x03" "abc", 8))));
  ASSERT_TRUE(client.ReadUntil([&] { return !client.field(1, "grpc-status").empty(); }));
  EXPECT_EQ("12", client.field(1, "grpc-status"));
  EXPECT_EQ("grpc-encoding br is not supported (gzip, deflate, identity)",
            client.field(1, "grpc-message"));
  EXPECT_EQ("identity,deflate,gzip", client.field(1, "grpc-accept-encoding"));
  EXPECT_FALSE(client.closed());
}

// What FillConnectionWindow saw: bytes sent, bytes on streams the server did not reset (what it
// may hold), streams reset.
struct WindowFill {
  uint64_t sent = 0, held = 0;
  int resets = 0;
};

// A client that respects every window and never lets a handler consume: `streams` streams to
// `path`, each sent `data` (or as much of it as the windows allow), as fast as the connection
// window lets it, until the server grants no more for 300 ms. Streams the server resets get no
// more bytes; every reset must be REFUSED_STREAM.
WindowFill FillConnectionWindow(int port, int streams, const std::string& path,
                                const std::string& data) {
  H2Socket client(port);
  WindowFill fill;
  EXPECT_TRUE(client.Send(std::string(kPreface) + Settings() + Frame(kSettings, 0x1, 0, "")));
  EXPECT_TRUE(client.ReadUntil([&] { return client.connection_window_granted() > 0; }));
  std::vector<size_t> sent_on(streams, 0);
  std::vector<bool> opened(streams, false);
  auto reset = [&](int i) { return client.rst_code(static_cast<uint32_t>(2 * i + 1)) >= 0; };
  const std::string block = RequestBlock(path);
  for (int round = 0; round < 1000; ++round) {
    const uint64_t window = 65535 + client.connection_window_granted();
    std::string bytes;
    for (int i = 0; i < streams && fill.sent < window; ++i) {
      if (reset(i)) continue;
      const auto stream = static_cast<uint32_t>(2 * i + 1);
      if (!opened[i]) bytes += Frame(kHeaders, kEndHeaders, stream, block);
      opened[i] = true;
      while (sent_on[i] < data.size() && fill.sent < window) {
        const size_t n = std::min<uint64_t>({16384, data.size() - sent_on[i], window - fill.sent});
        bytes += Frame(kData, 0, stream, std::string_view(data).substr(sent_on[i], n));
        sent_on[i] += n;
        fill.sent += n;
      }
    }
    if (bytes.empty()) {  // no window left: wait for more
      const uint64_t granted = client.connection_window_granted();
      client.ReadUntil([&] { return client.connection_window_granted() > granted; },
                       std::chrono::milliseconds(300));
      if (client.connection_window_granted() == granted) break;
      continue;
    }
    if (!client.Send(bytes)) break;
  }
  client.ReadUntil([] { return false; }, std::chrono::milliseconds(200));
  for (int i = 0; i < streams; ++i) {
    if (reset(i)) {
      ++fill.resets;
      EXPECT_EQ(NGHTTP2_REFUSED_STREAM, client.rst_code(2 * i + 1)) << i;
    } else {
      fill.held += sent_on[i];
    }
  }
  EXPECT_FALSE(client.closed());
  std::printf("[ measured ] the client sent %llu bytes, %d streams were refused, %llu bytes on "
              "the others (%llu asked)\n", static_cast<unsigned long long>(fill.sent),
              fill.resets, static_cast<unsigned long long>(fill.held),
              static_cast<unsigned long long>(uint64_t(streams) * data.size()));
  return fill;
}

// Unary requests never completed: 64 streams, each filled with all but the last byte of a
// max_body_size message. Past max_queued_request_bytes the server gives no window back but for
// the oldest stream — refusing the newest unfinished requests (REFUSED_STREAM) when their bytes
// hold the window the oldest needs — so what it holds stays within max_queued_request_bytes +
// max_body_size + http2_connection_window, however many streams; a good client keeps 0 errors.
TEST_P(GrpcHostileTest, WindowSizedDataOnManyStreamsIsBoundedByTheConnectionWindow) {
  options_.http2_connection_window = 8u << 20;
  StartWithGoodClient();
  TestRequest request;
  request.set_message("m");
  request.add_ballast(std::string(options_.max_body_size - 16, 'b'));
  std::string message = GrpcMessage(request);
  ASSERT_LE(message.size(), options_.max_body_size + 5);
  message.pop_back();  // never complete
  constexpr int kStreams = 64;  // max_queued_requests_per_connection
  const WindowFill fill = FillConnectionWindow(port_, kStreams, "/arenarpc.e2e.TestService/Echo",
                                               message);
  const uint64_t bound = options_.max_queued_request_bytes + options_.max_body_size +
                         options_.http2_connection_window;
  EXPECT_LE(fill.held, bound);
  EXPECT_GE(fill.sent, options_.http2_connection_window);  // it did fill the window
  EXPECT_LT(fill.held, uint64_t{kStreams} * message.size());  // and was stopped short
}

// Streaming calls whose handlers never read, each sent a stream window's worth of 16 KiB
// messages (4 MiB each, 128 MiB asked): their windows stay closed while their messages wait, and
// the connection window caps them all together — max_queued_request_bytes + max_body_size +
// http2_connection_window + 64 KiB of queue charge per stream; nothing is refused (a call that
// started is never refused), and a good client keeps 0 errors.
TEST_P(GrpcHostileTest, StreamingCallsNotReadAreBoundedByTheConnectionWindow) {
  GrpcStreamService streams(StreamService::descriptor());
  ASSERT_EQ(0, streams.AddMethod("ClientStream", HoldWithoutReading));
  options_.http2_connection_window = 8u << 20;
  constexpr int kStreams = 32;
  attack_fibers_ = kStreams;
  StartWithStreams(streams);
  StreamRequest message;
  message.set_text(std::string(16u << 10, 'x'));
  const std::string prefixed = Prefixed(message.SerializeAsString());
  std::string data;
  while (data.size() + prefixed.size() <= options_.http2_stream_window) data += prefixed;
  const WindowFill fill = FillConnectionWindow(port_, kStreams,
                                               "/arenarpc.e2e.StreamService/ClientStream", data);
  const uint64_t bound = options_.max_queued_request_bytes + options_.max_body_size +
                         options_.http2_connection_window;
  EXPECT_LE(fill.held, bound);
  EXPECT_GE(fill.sent, options_.http2_connection_window);
  EXPECT_EQ(0, fill.resets);
  EXPECT_TRUE(WaitFor([&] {
    return server_->GetMethodStats("arenarpc.e2e.StreamService.ClientStream").in_flight == 0;
  }, std::chrono::seconds(5)));
  StopWithStreams();
}

}  // namespace
}  // namespace arenarpc::e2e
