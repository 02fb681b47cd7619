// Streams on the built-in pages (docs/observability.md): brpc "STRM" streams and gRPC streaming
// calls (server-, client- and bidi-streaming) between a real server and real clients on loopback.
// /status?format=json shows each method's open streams and its traffic, /connections?format=json
// each connection's streams: exact message and byte counts each way, bytes buffered while the
// peer does not read, an age that grows, and open counts back to 0 once the streams close.

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/channel.h"
#include "arenarpc/closure_guard.h"
#include "arenarpc/fiber.h"
#include "arenarpc/grpc_client_stream.h"
#include "arenarpc/grpc_stream.h"
#include "arenarpc/rpcz.h"
#include "arenarpc/server.h"
#include "arenarpc/stream.h"
#include "e2e_test.pb.h"
#include "grpc_stream_test.pb.h"
#include "http_get.h"
#include "stats/span_store.h"

namespace arenarpc::e2e {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using google::protobuf::Struct;
using google::protobuf::Value;

constexpr char kEcho[] = "arenarpc.e2e.TestService.Echo";
constexpr char kServerStream[] = "arenarpc.e2e.StreamService.ServerStream";
constexpr char kClientStream[] = "arenarpc.e2e.StreamService.ClientStream";
constexpr char kBidi[] = "arenarpc.e2e.StreamService.Bidi";
constexpr char kPush[] = "arenarpc.e2e.StreamService.Push";

// A STRM reader: counts what it got; holds each batch (does not consume it) while `hold`.
class Reader : public StreamInputHandler {
 public:
  std::atomic<bool> hold{false};
  std::atomic<int> messages{0};
  std::atomic<int> closed{0};
  int on_received_messages(StreamId, IOBuf* const[], size_t size) override {
    while (hold.load()) fiber::SleepFor(1ms);
    messages.fetch_add(static_cast<int>(size));
    return 0;
  }
  void on_idle_timeout(StreamId) override {}
  void on_closed(StreamId) override { closed.fetch_add(1); }
  // The reader must outlive its streams' last handler call (on_closed).
  bool WaitClosed(int n) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (closed.load() < n && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
    return closed.load() >= n;
  }
};

// baidu_std Echo that accepts the offered stream (read by `reader`) and records its id and the
// client's address.
class StrmService final : public TestService {
 public:
  void Echo(google::protobuf::RpcController* base, const TestRequest* request,
            TestResponse* response, google::protobuf::Closure* done) override {
    ClosureGuard guard(done);
    auto* cntl = static_cast<Controller*>(base);
    StreamOptions options;
    options.handler = &reader;
    StreamId id;
    if (StreamAccept(&id, *cntl, &options) != 0) {
      cntl->SetFailed("no stream");
      return;
    }
    std::lock_guard lock(mutex);
    ids.push_back(id);
    remote = cntl->remote_side();
    response->set_message(request->message());
  }
  Reader reader;
  std::mutex mutex;
  std::vector<StreamId> ids;
  std::string remote;
};

const google::protobuf::MethodDescriptor* Method(const char* name) {
  return StreamService::descriptor()->FindMethodByName(name);
}

IOBuf Bytes(const std::string& text) {
  IOBuf buf;
  buf.append(text);
  return buf;
}

const Struct& Obj(const Struct& s, const std::string& key) {
  return s.fields().at(key).struct_value();
}
double Num(const Struct& s, const std::string& key) { return s.fields().at(key).number_value(); }

class StreamPagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc_ = std::make_unique<GrpcStreamService>(StreamService::descriptor(), nullptr);
    ASSERT_EQ(0, grpc_->AddMethod("ServerStream", [this](GrpcServerStream& stream) {
      RecordRemote(stream);
      GrpcStreamMessages in;
      if (!stream.Read(&in)) return;
      const int count = in.request<StreamRequest>().count();
      for (int i = 0; i < count; ++i) {
        GrpcStreamMessages out = stream.NewMessages();
        out.response<StreamReply>().set_index(i);
        out.response<StreamReply>().set_text("server-stream");
        if (!stream.Write(std::move(out))) return;
      }
      // Stays open until the test releases it (or the client cancels).
      while (!release_.load() && !stream.controller().IsCanceled()) fiber::SleepFor(1ms);
    }));
    ASSERT_EQ(0, grpc_->AddMethod("ClientStream", [this](GrpcServerStream& stream) {
      RecordRemote(stream);
      GrpcStreamMessages in;
      int count = 0;
      while (stream.Read(&in)) ++count;
      if (stream.controller().IsCanceled()) return;
      GrpcStreamMessages out = stream.NewMessages();
      out.response<StreamReply>().set_index(count);
      stream.Write(std::move(out));
    }));
    ASSERT_EQ(0, grpc_->AddMethod("Bidi", [this](GrpcServerStream& stream) {
      RecordRemote(stream);
      GrpcStreamMessages m;
      while (stream.Read(&m)) {
        m.response<StreamReply>().set_text(m.request<StreamRequest>().text());
        if (!stream.Write(std::move(m))) return;
      }
    }));
    ASSERT_EQ(0, grpc_->AddMethod("Push", [this](GrpcServerStream& stream) {
      RecordRemote(stream);
      GrpcStreamMessages in;
      if (!stream.Read(&in)) return;
      const int bytes = in.request<StreamRequest>().bytes();
      for (;;) {  // until the client cancels
        GrpcStreamMessages out = stream.NewMessages();
        out.response<StreamReply>().set_payload(std::string(bytes, 'p'));
        if (!stream.Write(std::move(out))) return;
      }
    }));
    ASSERT_EQ(0, server_.AddService(&strm_, SERVER_DOESNT_OWN_SERVICE));
    ASSERT_EQ(0, server_.AddService(grpc_.get(), SERVER_DOESNT_OWN_SERVICE));
    ServerOptions options;
    options.num_threads = 2;
    ASSERT_EQ(0, server_.Start("127.0.0.1:0", options)) << server_.last_error();
    port_ = server_.listen_port();
    const std::string address = "127.0.0.1:" + std::to_string(port_);
    ChannelOptions strm_options;
    strm_options.timeout_ms = 10000;
    ASSERT_EQ(0, strm_channel_.Init(address, &strm_options)) << strm_channel_.last_error();
    ChannelOptions grpc_options;
    grpc_options.protocol = "grpc";
    grpc_options.timeout_ms = 20000;
    grpc_options.grpc_stream_window = 64u << 10;  // a client that does not read stalls Push soon
    ASSERT_EQ(0, grpc_channel_.Init(address, &grpc_options)) << grpc_channel_.last_error();
  }

  void TearDown() override {
    release_.store(true);
    server_.Stop();
    server_.Join();
  }

  void RecordRemote(GrpcServerStream& stream) {
    std::lock_guard lock(mutex_);
    grpc_remote_ = stream.controller().remote_side();
  }
  std::string GrpcRemote() {
    std::lock_guard lock(mutex_);
    return grpc_remote_;
  }

  // A client STRM stream (read by `reader`), connected by an Echo call.
  StreamId OpenStrm(Reader* reader) {
    Controller cntl;
    StreamOptions options;
    options.handler = reader;
    StreamId id = INVALID_STREAM_ID;
    EXPECT_EQ(0, StreamCreate(&id, cntl, &options));
    TestService_Stub stub(&strm_channel_);
    TestRequest request;
    request.set_message("open");
    TestResponse response;
    stub.Echo(&cntl, &request, &response, nullptr);
    EXPECT_FALSE(cntl.Failed()) << cntl.ErrorText();
    return id;
  }
  std::vector<StreamId> ServerStrmIds() {
    std::lock_guard lock(strm_.mutex);
    return strm_.ids;
  }

  // The page as JSON, parsed (a failure to parse fails the test).
  Struct Page(const std::string& path) {
    int status = 0;
    const auto body = builtin::HttpGet(port_, path + "?format=json", &status);
    Struct json;
    EXPECT_TRUE(body.has_value()) << path;
    if (!body) return json;
    EXPECT_EQ(200, status) << *body;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(*body, &json).ok()) << *body;
    return json;
  }
  std::string Text(const std::string& path) {
    const auto body = builtin::HttpGet(port_, path);
    return body ? *body : std::string();
  }
  // /status's "streams" object of `method`.
  Struct MethodStreams(const std::string& method) {
    const Struct status = Page("/status");
    for (const Value& m : status.fields().at("methods").list_value().values()) {
      const Struct& fields = m.struct_value();
      if (fields.fields().at("name").string_value() == method) return Obj(fields, "streams");
    }
    ADD_FAILURE() << "no method " << method << " on /status";
    return Struct();
  }
  // /connections' row of the connection from `remote`.
  Struct Connection(const std::string& remote) {
    const Struct page = Page("/connections");
    for (const Value& c : page.fields().at("connections").list_value().values()) {
      if (c.struct_value().fields().at("remote").string_value() == remote) return c.struct_value();
    }
    ADD_FAILURE() << "no connection from " << remote << " on /connections";
    return Struct();
  }
  // Fetches until `done` holds (at most 10 s): the last fetch.
  static Struct PollUntil(const std::function<Struct()>& fetch,
                          const std::function<bool(const Struct&)>& done) {
    const auto deadline = Clock::now() + 10s;
    Struct last = fetch();
    while (!done(last) && Clock::now() < deadline) {
      std::this_thread::sleep_for(20ms);
      last = fetch();
    }
    return last;
  }

  StrmService strm_;
  std::unique_ptr<GrpcStreamService> grpc_;
  Server server_;
  int port_ = 0;
  Channel strm_channel_, grpc_channel_;
  std::atomic<bool> release_{false};
  std::mutex mutex_;
  std::string grpc_remote_;
};

// The streams of a /connections row, by id.
std::map<uint64_t, Struct> StreamsById(const Struct& connection) {
  std::map<uint64_t, Struct> out;
  for (const Value& s : connection.fields().at("streams").list_value().values()) {
    out[static_cast<uint64_t>(Num(s.struct_value(), "id"))] = s.struct_value();
  }
  return out;
}

TEST_F(StreamPagesTest, OpenStreamsTrafficAgeAndCloseOnStatusAndConnections) {
  // N = 3 STRM streams: client stream i writes i + 1 messages; the server writes 2 to each.
  constexpr int kStrm = 3;
  Reader client_reader;
  std::vector<StreamId> client_ids;
  for (int i = 0; i < kStrm; ++i) client_ids.push_back(OpenStrm(&client_reader));
  const std::vector<StreamId> server_ids = ServerStrmIds();
  ASSERT_EQ(static_cast<size_t>(kStrm), server_ids.size());
  std::map<StreamId, uint64_t> strm_in_bytes, strm_in_messages;  // by server id
  uint64_t strm_bytes_in = 0, strm_messages_in = 0;
  for (int i = 0; i < kStrm; ++i) {
    for (int j = 0; j <= i; ++j) {
      const std::string text = "strm " + std::to_string(i) + "/" + std::string(j * 10, 'x');
      ASSERT_EQ(0, StreamWrite(client_ids[i], Bytes(text)));
      strm_in_bytes[server_ids[i]] += text.size();
      ++strm_in_messages[server_ids[i]];
      strm_bytes_in += text.size();
      ++strm_messages_in;
    }
  }
  const std::string reply = "reply from the server";
  for (StreamId id : server_ids) {
    for (int j = 0; j < 2; ++j) ASSERT_EQ(0, StreamWrite(id, Bytes(reply)));
  }

  // M = 4 gRPC streams on one connection: a server stream, a client stream, two bidi streams.
  Controller ss_cntl, cs_cntl, bidi_cntl[2];
  GrpcClientStream server_stream, client_stream, bidi[2];
  StreamRequest ss_request;
  ss_request.set_count(5);
  ASSERT_EQ(0, server_stream.Open(grpc_channel_, Method("ServerStream"), &ss_cntl));
  ASSERT_TRUE(server_stream.Write(ss_request));
  uint64_t ss_out_bytes = 0;
  for (int i = 0; i < 5; ++i) {
    StreamReply r;
    ASSERT_TRUE(server_stream.Read(&r)) << i;
    ss_out_bytes += r.ByteSizeLong();
  }
  ASSERT_EQ(0, client_stream.Open(grpc_channel_, Method("ClientStream"), &cs_cntl));
  uint64_t cs_in_bytes = 0;
  for (int i = 0; i < 4; ++i) {
    StreamRequest r;
    r.set_text(std::string(i * 7 + 1, 'c'));
    cs_in_bytes += r.ByteSizeLong();
    ASSERT_TRUE(client_stream.Write(r));
  }
  uint64_t bidi_bytes = 0;  // each way: echoes
  for (int s = 0; s < 2; ++s) {
    ASSERT_EQ(0, bidi[s].Open(grpc_channel_, Method("Bidi"), &bidi_cntl[s]));
    for (int i = 0; i < 3; ++i) {
      StreamRequest r;
      r.set_text("bidi " + std::to_string(s) + std::string(i * 5, 'b'));
      ASSERT_TRUE(bidi[s].Write(r));
      StreamReply back;
      ASSERT_TRUE(bidi[s].Read(&back));
      bidi_bytes += r.ByteSizeLong();
      EXPECT_EQ(r.text(), back.text());
    }
  }

  // /status: open streams and traffic per method (the server counts what it took and wrote).
  const Struct echo = PollUntil([&] { return MethodStreams(kEcho); }, [&](const Struct& s) {
    return Num(s, "messages_in") == strm_messages_in;
  });
  EXPECT_EQ(kStrm, Num(echo, "open"));
  EXPECT_EQ(kStrm, Num(echo, "opened"));
  EXPECT_EQ(strm_messages_in, Num(echo, "messages_in"));
  EXPECT_EQ(strm_bytes_in, Num(echo, "bytes_in"));
  EXPECT_EQ(2 * kStrm, Num(echo, "messages_out"));
  EXPECT_EQ(2 * kStrm * reply.size(), Num(echo, "bytes_out"));
  const Struct ss = MethodStreams(kServerStream);
  EXPECT_EQ(1, Num(ss, "open"));
  EXPECT_EQ(1, Num(ss, "messages_in"));
  EXPECT_EQ(ss_request.ByteSizeLong(), Num(ss, "bytes_in"));
  EXPECT_EQ(5, Num(ss, "messages_out"));
  EXPECT_EQ(ss_out_bytes, Num(ss, "bytes_out"));
  const Struct cs = PollUntil([&] { return MethodStreams(kClientStream); },
                              [&](const Struct& s) { return Num(s, "messages_in") == 4; });
  EXPECT_EQ(1, Num(cs, "open"));
  EXPECT_EQ(4, Num(cs, "messages_in"));
  EXPECT_EQ(cs_in_bytes, Num(cs, "bytes_in"));
  EXPECT_EQ(0, Num(cs, "messages_out"));
  const Struct bd = MethodStreams(kBidi);
  EXPECT_EQ(2, Num(bd, "open"));
  EXPECT_EQ(6, Num(bd, "messages_in"));
  EXPECT_EQ(6, Num(bd, "messages_out"));
  EXPECT_EQ(bidi_bytes, Num(bd, "bytes_in"));
  EXPECT_EQ(bidi_bytes, Num(bd, "bytes_out"));
  EXPECT_EQ(0, Num(MethodStreams(kPush), "open"));
  EXPECT_EQ(0, Num(MethodStreams(kPush), "opened"));

  // /connections: the STRM connection holds the 3 STRM streams, the gRPC one the 4 gRPC streams.
  const Struct strm_row = Connection(strm_.remote);
  EXPECT_EQ("baidu_std", strm_row.fields().at("protocol").string_value());
  EXPECT_EQ(kStrm, Num(strm_row, "streams_open"));
  const auto strm_streams = StreamsById(strm_row);
  ASSERT_EQ(static_cast<size_t>(kStrm), strm_streams.size());
  for (StreamId id : server_ids) {
    ASSERT_TRUE(strm_streams.count(id)) << id;
    const Struct& s = strm_streams.at(id);
    EXPECT_EQ("strm", s.fields().at("kind").string_value());
    EXPECT_EQ(kEcho, s.fields().at("method").string_value());
    EXPECT_EQ(strm_in_messages[id], Num(s, "messages_in"));
    EXPECT_EQ(strm_in_bytes[id], Num(s, "bytes_in"));
    EXPECT_EQ(2, Num(s, "messages_out"));
    EXPECT_EQ(2 * reply.size(), Num(s, "bytes_out"));
    EXPECT_GE(Num(s, "age_seconds"), 0);
  }
  const Struct grpc_row = Connection(GrpcRemote());
  EXPECT_EQ(4, Num(grpc_row, "streams_open"));
  std::map<std::string, int> grpc_methods;
  for (const auto& [id, s] : StreamsById(grpc_row)) {
    EXPECT_EQ("grpc", s.fields().at("kind").string_value());
    ++grpc_methods[s.fields().at("method").string_value()];
  }
  EXPECT_EQ((std::map<std::string, int>{{kServerStream, 1}, {kClientStream, 1}, {kBidi, 2}}),
            grpc_methods);

  // The text forms name them too.
  EXPECT_NE(std::string::npos, Text("/status").find("streams open (since start)"));
  const std::string connections_text = Text("/connections");
  EXPECT_NE(std::string::npos, connections_text.find("strm stream " + std::to_string(server_ids[0])))
      << connections_text;
  EXPECT_NE(std::string::npos, connections_text.find("grpc stream")) << connections_text;

  // Age grows.
  const double age_before = Num(StreamsById(Connection(strm_.remote)).at(server_ids[0]), "age_seconds");
  std::this_thread::sleep_for(300ms);
  const double age_after = Num(StreamsById(Connection(strm_.remote)).at(server_ids[0]), "age_seconds");
  EXPECT_GE(age_after - age_before, 0.25);
  EXPECT_GE(Num(MethodStreams(kEcho), "oldest_age_seconds"), age_after);

  // Everything closes: the open counts go back to 0, the totals since start stay.
  for (StreamId id : client_ids) EXPECT_EQ(0, StreamClose(id));
  EXPECT_TRUE(client_reader.WaitClosed(kStrm));
  release_.store(true);
  EXPECT_EQ(0, server_stream.Finish()) << ss_cntl.ErrorText();
  EXPECT_TRUE(client_stream.WritesDone());
  StreamReply count;
  EXPECT_TRUE(client_stream.Read(&count));
  EXPECT_EQ(4, count.index());
  EXPECT_EQ(0, client_stream.Finish()) << cs_cntl.ErrorText();
  for (auto& b : bidi) {
    EXPECT_TRUE(b.WritesDone());
    EXPECT_EQ(0, b.Finish());
  }
  for (const char* method : {kEcho, kServerStream, kClientStream, kBidi}) {
    const Struct after = PollUntil([&] { return MethodStreams(method); },
                                   [](const Struct& s) { return Num(s, "open") == 0; });
    EXPECT_EQ(0, Num(after, "open")) << method;
    EXPECT_EQ(0, Num(after, "oldest_age_seconds")) << method;
  }
  const Struct echo_after = MethodStreams(kEcho);
  EXPECT_EQ(kStrm, Num(echo_after, "opened"));
  EXPECT_EQ(strm_bytes_in, Num(echo_after, "bytes_in"));
  EXPECT_EQ(2 * kStrm * reply.size(), Num(echo_after, "bytes_out"));
  const Struct cs_after = MethodStreams(kClientStream);
  EXPECT_EQ(1, Num(cs_after, "messages_out"));  // its one reply, written before it closed
  EXPECT_EQ(cs_in_bytes, Num(cs_after, "bytes_in"));
  EXPECT_EQ(2, Num(MethodStreams(kBidi), "opened"));
  const Struct page = Page("/connections");
  for (const Value& c : page.fields().at("connections").list_value().values()) {
    EXPECT_EQ(0, Num(c.struct_value(), "streams_open"));
    EXPECT_EQ(0, c.struct_value().fields().at("streams").list_value().values_size());
  }
}

TEST_F(StreamPagesTest, PeerThatDoesNotReadShowsBytesBuffered) {
  // STRM, client -> server: the server's handler holds its batch; the bytes wait for it.
  Reader client_reader;
  const StreamId client_id = OpenStrm(&client_reader);
  const StreamId server_id = ServerStrmIds().at(0);
  auto strm_stream = [&] { return StreamsById(Connection(strm_.remote)).at(server_id); };
  strm_.reader.hold.store(true);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(0, StreamWrite(client_id, Bytes(std::string(500, 'i'))));
  Struct s = PollUntil(strm_stream, [](const Struct& s) { return Num(s, "messages_in") == 3; });
  EXPECT_EQ(1500, Num(s, "buffered_in_bytes"));
  EXPECT_EQ(1500, Num(MethodStreams(kEcho), "buffered_in_bytes"));
  strm_.reader.hold.store(false);
  s = PollUntil(strm_stream, [](const Struct& s) { return Num(s, "buffered_in_bytes") == 0; });
  EXPECT_EQ(0, Num(s, "buffered_in_bytes"));

  // STRM, server -> client: the client's handler holds its batch, so no FEEDBACK comes back and
  // every byte the server wrote stays unacknowledged.
  client_reader.hold.store(true);
  constexpr int kMessages = 4, kBytes = 1000;
  for (int i = 0; i < kMessages; ++i) {
    ASSERT_EQ(0, StreamWrite(server_id, Bytes(std::string(kBytes, 'o'))));
  }
  s = PollUntil(strm_stream, [&](const Struct& s) { return Num(s, "bytes_out") == kMessages * kBytes; });
  EXPECT_EQ(kMessages * kBytes, Num(s, "buffered_out_bytes"));
  EXPECT_EQ(kMessages * kBytes, Num(MethodStreams(kEcho), "buffered_out_bytes"));
  // Once the client reads, its FEEDBACK acknowledges them all.
  client_reader.hold.store(false);
  s = PollUntil(strm_stream, [](const Struct& s) { return Num(s, "buffered_out_bytes") == 0; });
  EXPECT_EQ(0, Num(s, "buffered_out_bytes"));
  EXPECT_EQ(kMessages, client_reader.messages.load());

  // gRPC: Push writes 16 KiB messages to a client that never reads; past the client's 64 KiB
  // window they wait in the server.
  {
    Controller cntl;
    GrpcClientStream push;
    ASSERT_EQ(0, push.Open(grpc_channel_, Method("Push"), &cntl));
    StreamRequest request;
    request.set_bytes(16 << 10);
    ASSERT_TRUE(push.Write(request));
    // Push's first messages are held until the connection's thread flushes them, so wait for
    // the window's worth to have gone and the rest to wait.
    const Struct p = PollUntil([&] { return MethodStreams(kPush); }, [](const Struct& s) {
      return Num(s, "buffered_out_bytes") > 0 && Num(s, "bytes_out") >= (64 << 10);
    });
    EXPECT_EQ(1, Num(p, "open"));
    EXPECT_GT(Num(p, "buffered_out_bytes"), 0);
    EXPECT_GE(Num(p, "bytes_out"), 64 << 10);  // at least the window's worth was written
    const auto streams = StreamsById(Connection(GrpcRemote()));
    ASSERT_EQ(1u, streams.size());
    EXPECT_GT(Num(streams.begin()->second, "buffered_out_bytes"), 0);
    push.StartCancel();
  }
  const Struct p = PollUntil([&] { return MethodStreams(kPush); },
                             [](const Struct& s) { return Num(s, "open") == 0; });
  EXPECT_EQ(0, Num(p, "open"));
  EXPECT_EQ(0, Num(p, "buffered_out_bytes"));
  EXPECT_EQ(0, StreamClose(client_id));
  EXPECT_TRUE(client_reader.WaitClosed(1));
}

// rpcz: a sampled bidi stream has a client span (its bytes each way, started, sent, first reply)
// and the server's span of the same trace, which ends when the handler does.
TEST_F(StreamPagesTest, SampledGrpcStreamsHaveSpansOnBothSides) {
  const int budget = RpczSpansPerSecond();
  SetRpczSpansPerSecond(100000);
  stats::SpanStore::Default().Clear();
  const TraceContext trace = TraceContext::NewRoot();
  uint64_t sent = 0;
  {
    Controller cntl;
    cntl.set_trace(trace);
    GrpcClientStream bidi;
    ASSERT_EQ(0, bidi.Open(grpc_channel_, Method("Bidi"), &cntl));
    for (int i = 0; i < 3; ++i) {
      StreamRequest r;
      r.set_text(std::string(10 + i, 's'));
      sent += 5 + r.ByteSizeLong();  // the gRPC message prefix and the message
      ASSERT_TRUE(bidi.Write(r));
      StreamReply back;
      ASSERT_TRUE(bidi.Read(&back));
    }
    ASSERT_TRUE(bidi.WritesDone());
    ASSERT_EQ(0, bidi.Finish());
  }
  std::vector<std::shared_ptr<const Span>> spans;
  for (int i = 0; i < 200 && spans.size() < 2; ++i) {
    spans = stats::SpanStore::Default().FindTrace(trace.trace_id_high, trace.trace_id);
    if (spans.size() < 2) std::this_thread::sleep_for(10ms);
  }
  SetRpczSpansPerSecond(budget);
  ASSERT_EQ(2u, spans.size());
  const Span* client = spans[0]->kind == SpanKind::kClient ? spans[0].get() : spans[1].get();
  const Span* server = spans[0]->kind == SpanKind::kServer ? spans[0].get() : spans[1].get();
  ASSERT_NE(client, server);
  EXPECT_EQ("arenarpc.e2e.StreamService.Bidi", client->method);
  EXPECT_EQ(sent, client->request_bytes);
  EXPECT_EQ(sent, client->response_bytes);  // the handler echoes each message
  EXPECT_EQ(0, client->error_code);
  ASSERT_TRUE(client->phase(SpanPhase::kSent).has_value());
  ASSERT_TRUE(client->phase(SpanPhase::kReplyReceived).has_value());
  EXPECT_LE(*client->phase(SpanPhase::kSent), *client->phase(SpanPhase::kReplyReceived));
  EXPECT_LE(*client->phase(SpanPhase::kReplyReceived), client->latency);
  EXPECT_EQ("arenarpc.e2e.StreamService.Bidi", server->method);
  EXPECT_EQ(client->trace.span_id, server->trace.parent_span_id);  // W3C: the server's a child
  ASSERT_TRUE(server->phase(SpanPhase::kHandlerEnded).has_value());
}

}  // namespace
}  // namespace arenarpc::e2e
