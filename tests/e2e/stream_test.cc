// brpc streaming RPC (docs/streaming.md) between a real server and client on loopback: echo,
// server push, closes from either side, flow control, idle timeout, failed and refused setups,
// connection loss, RST for unknown streams (bytes checked against the spec) and a hostile peer.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/channel.h"
#include "arenarpc/fiber.h"
#include "arenarpc/server.h"
#include "arenarpc/stream.h"
#include "e2e_test.pb.h"
#include "good_client.h"
#include "process_rss.h"
#include "protocol/frame_codec.h"
#include "protocol/stream_frame.h"
#include "raw_client.h"

namespace arenarpc::e2e {
namespace {

using namespace std::chrono_literals;

// Records what a stream delivered; optionally echoes, or holds each batch until released.
class Recorder : public StreamInputHandler {
 public:
  bool echo = false;
  std::atomic<bool> hold{false};

  int on_received_messages(StreamId id, IOBuf* const messages[], size_t size) override {
    while (hold.load()) fiber::SleepFor(1ms);
    std::lock_guard lock(mutex_);
    for (size_t i = 0; i < size; ++i) {
      received_.push_back(messages[i]->to_string());
      if (echo) {
        EXPECT_EQ(0, StreamWrite(id, *messages[i]));
      }
    }
    changed_.notify_all();
    return 0;
  }
  void on_idle_timeout(StreamId) override { ++idle_timeouts; }
  void on_closed(StreamId) override {
    std::lock_guard lock(mutex_);
    closed_ = true;
    changed_.notify_all();
  }
  void on_failed(StreamId, int code, const std::string&) override { failed_code = code; }

  bool WaitForMessages(size_t n, std::chrono::milliseconds timeout = 10s) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return received_.size() >= n; });
  }
  bool WaitForClosed(std::chrono::milliseconds timeout = 10s) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return closed_; });
  }
  std::vector<std::string> received() {
    std::lock_guard lock(mutex_);
    return received_;
  }
  bool closed() {
    std::lock_guard lock(mutex_);
    return closed_;
  }
  // Forgets what it recorded (for the next stream it handles).
  void Reset() {
    std::lock_guard lock(mutex_);
    received_.clear();
    closed_ = false;
    failed_code = 0;
  }

  std::atomic<int> idle_timeouts{0};
  std::atomic<int> failed_code{0};

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> received_;
  bool closed_ = false;
};

IOBuf Message(const std::string& text) {
  IOBuf buf;
  buf.append(text);
  return buf;
}

// A request frame for `what` that offers the client stream `stream_id`.
std::string StreamCallFrame(const std::string& what, int64_t correlation_id, int64_t stream_id,
                            bool need_feedback) {
  TestRequest request;
  request.set_message(what);
  protocol::RpcMeta meta;
  meta.mutable_request()->set_service_name("arenarpc.e2e.TestService");
  meta.mutable_request()->set_method_name("Echo");
  meta.set_correlation_id(correlation_id);
  meta.mutable_stream_settings()->set_stream_id(stream_id);
  meta.mutable_stream_settings()->set_need_feedback(need_feedback);
  meta.mutable_stream_settings()->set_writable(true);
  net::BufferChain payload, out;
  payload.append(request.SerializeAsString());
  protocol::EncodeFrame(meta, std::move(payload), net::BufferChain(), &out);
  return out.to_string();
}

// A DATA frame from stream `from` to stream `to`.
std::string DataFrameBytes(int64_t to, int64_t from, std::string_view data) {
  protocol::StreamFrameMeta meta;
  meta.set_stream_id(to);
  meta.set_source_stream_id(from);
  meta.set_frame_type(protocol::FRAME_TYPE_DATA);
  meta.set_has_continuation(false);
  net::BufferChain message, wire;
  message.append(data);
  protocol::EncodeStreamFrame(meta, std::move(message), &wire);
  return wire.to_string();
}

// Decodes the "STRM" frame a RawClient read.
::testing::AssertionResult DecodeStreamFrame(const std::string& bytes,
                                             protocol::StreamFrame* frame) {
  net::BufferChain in;
  in.append(bytes);
  protocol::StreamFrameDecoder decoder;
  if (decoder.Next(in, frame) != protocol::DecodeStatus::kFrame || !in.empty()) {
    return ::testing::AssertionFailure() << "not one stream frame: " << decoder.error();
  }
  return ::testing::AssertionSuccess();
}

// Sends the call `what` offering client stream `client_stream` and reads the accepting reply (a
// DATA frame); returns the server's stream id, or -1.
int64_t OpenRawStream(RawClient& raw, const std::string& what, int64_t client_stream,
                      bool need_feedback) {
  raw.SendBytes(StreamCallFrame(what, 1, client_stream, need_feedback));
  std::string bytes;
  protocol::StreamFrame accepted;
  if (!raw.ReadFrameBytes(&bytes) || !DecodeStreamFrame(bytes, &accepted)) return -1;
  return accepted.meta.source_stream_id();
}

// What the handler does with the offered stream, by request message:
//   "echo"          accept, echo every message back
//   "early"         as "echo", and write one message before the reply
//   "push:N"        accept, write N messages "m<i>" after the reply (waiting on a full window),
//                   then close
//   "hold"          accept with a reader that holds its batches until released
//   "small"         accept with max_unconsumed_bytes = 64 KiB and a held reader
//   "fail"          accept, then fail the call
//   "own"           accept with a handler of its own; a refused one is kept aside, never deleted
//   "flood"         accept with no window (max_buf_size 0); after the reply a fiber writes 16 KiB
//                   messages until StreamWrite refuses, waits for the connection to drain
//                   (flood_drain), writes "last" and closes (flood_* record what happened)
//   "close:N"       accept with a handler of its own that echoes and closes the stream inside
//                   on_received_messages once it has echoed N messages
//   "pending-close" accept, write "a" "b" "c" and close, all before the reply is written
//   anything else   plain echo, no stream accepted
// Echoes every message and closes the stream once it has echoed `close_after` (server side).
class EchoCloser : public StreamInputHandler {
 public:
  explicit EchoCloser(int close_after) : close_after_(close_after) {}
  int on_received_messages(StreamId id, IOBuf* const messages[], size_t size) override {
    for (size_t i = 0; i < size; ++i) {
      if (StreamWrite(id, *messages[i]) != 0) write_failures.fetch_add(1);
      if (++echoed_ == close_after_) StreamClose(id);
    }
    return 0;
  }
  void on_idle_timeout(StreamId) override {}
  void on_closed(StreamId) override { closed.store(true); }
  std::atomic<int> write_failures{0};
  std::atomic<bool> closed{false};

 private:
  const int close_after_;
  int echoed_ = 0;
};

class StreamService : public TestService {
 public:
  Recorder server_side;
  std::atomic<int> accepted{0}, refused{0};
  std::atomic<StreamId> last_id{INVALID_STREAM_ID};
  // "own": handlers StreamAccept refused, kept to check they were never called.
  std::mutex handlers_mutex;
  std::vector<std::unique_ptr<Recorder>> refused_handlers, accepted_handlers;
  std::vector<std::unique_ptr<EchoCloser>> closers;
  // "flood"
  std::atomic<int> flood_refusal{0}, flood_wait_while_full{0}, flood_wait_after{-1};
  std::atomic<int64_t> flood_messages{0};
  std::atomic<bool> flood_drain{false}, flood_done{false};

  void Echo(google::protobuf::RpcController* base, const TestRequest* request,
            TestResponse* response, google::protobuf::Closure* done) override {
    ClosureGuard guard(done);
    auto* cntl = static_cast<Controller*>(base);
    response->set_message(request->message());
    const std::string& what = request->message();
    if (what == "own") return AcceptOwn(cntl);
    if (what == "flood") return AcceptFlood(cntl, guard.release());
    if (what.rfind("close:", 0) == 0) return AcceptCloser(cntl, std::stoi(what.substr(6)));
    const bool offers = what == "echo" || what == "early" || what == "hold" || what == "small" ||
                        what == "fail" || what == "pending-close" || what.rfind("push:", 0) == 0;
    if (!offers) return;  // "none", and the good client's calls
    StreamOptions options;
    options.handler = &server_side;
    if (what == "hold" || what == "small") server_side.hold = true;
    if (what == "small") options.max_unconsumed_bytes = 64 << 10;
    // A small window: the pushing fiber meets EAGAIN and waits in StreamWait (suspended).
    if (what.rfind("push:", 0) == 0) options.max_buf_size = 1024;
    StreamId id = INVALID_STREAM_ID;
    if (StreamAccept(&id, *cntl, &options) != 0) {
      ++refused;
      cntl->SetFailed(EOVERCROWDED, "stream refused");
      return;
    }
    ++accepted;
    last_id = id;
    if (what == "fail") cntl->SetFailed(EINVAL, "handler failed");
    if (what == "echo" || what == "early") server_side.echo = true;
    if (what == "early") {
      EXPECT_EQ(0, StreamWrite(id, Message("before the reply")));
    }
    if (what == "pending-close") {
      for (const char* text : {"a", "b", "c"}) EXPECT_EQ(0, StreamWrite(id, Message(text)));
      EXPECT_EQ(0, StreamClose(id));
      EXPECT_EQ(EINVAL, StreamWrite(id, Message("after the close")));
    }
    if (what.rfind("push:", 0) == 0) {
      const int n = std::stoi(what.substr(5));
      guard.release()->Run();  // reply first: the stream connects when it is written
      EXPECT_TRUE(fiber::Start([id, n] {
        for (int i = 0; i < n; ++i) {
          int rc;
          while ((rc = StreamWrite(id, Message("m" + std::to_string(i)))) == EAGAIN) {
            EXPECT_EQ(0, StreamWait(id, nullptr));
          }
          EXPECT_EQ(0, rc);
        }
        StreamClose(id);
      }));
    }
  }

 private:
  void AcceptOwn(Controller* cntl) {
    auto handler = std::make_unique<Recorder>();
    StreamOptions options;
    options.handler = handler.get();
    StreamId id = INVALID_STREAM_ID;
    std::lock_guard lock(handlers_mutex);
    if (StreamAccept(&id, *cntl, &options) != 0) {
      // brpc code deletes its handler here; it must not have been called.
      ++refused;
      refused_handlers.push_back(std::move(handler));
      cntl->SetFailed(EOVERCROWDED, "stream refused");
      return;
    }
    ++accepted;
    accepted_handlers.push_back(std::move(handler));
  }

  void AcceptCloser(Controller* cntl, int close_after) {
    auto handler = std::make_unique<EchoCloser>(close_after);
    StreamOptions options;
    options.handler = handler.get();
    StreamId id = INVALID_STREAM_ID;
    if (StreamAccept(&id, *cntl, &options) != 0) {
      cntl->SetFailed(EOVERCROWDED, "stream refused");
      return;
    }
    std::lock_guard lock(handlers_mutex);
    closers.push_back(std::move(handler));
  }

  void AcceptFlood(Controller* cntl, google::protobuf::Closure* done) {
    StreamOptions options;
    options.max_buf_size = 0;  // no window: only the connection's bound holds the writer
    StreamId id = INVALID_STREAM_ID;
    EXPECT_EQ(0, StreamAccept(&id, *cntl, &options));
    done->Run();
    EXPECT_TRUE(fiber::Start([this, id] {
      const std::string chunk(16 << 10, 'w');
      int rc = 0;
      while ((rc = StreamWrite(id, Message(chunk))) == 0) {
        if (flood_messages.fetch_add(1) > 64 * 1024) break;  // 1 GiB: the bound did not hold
      }
      flood_refusal = rc;
      const timespec soon = Deadline(100ms);
      flood_wait_while_full = StreamWait(id, &soon);
      while (!flood_drain.load()) fiber::SleepFor(1ms);
      const timespec later = Deadline(10s);
      flood_wait_after = StreamWait(id, &later);
      EXPECT_EQ(0, StreamWrite(id, Message("last")));
      EXPECT_EQ(0, StreamClose(id));
      flood_done = true;
    }));
  }

  static timespec Deadline(std::chrono::milliseconds after) {
    const auto at = std::chrono::system_clock::now() + after;
    const auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count();
    return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  }
};

// The client's side of one stream call.
struct ClientEnd {
  Recorder recorder;
  Controller cntl;
  TestResponse response;
  StreamId id = INVALID_STREAM_ID;
};

class StreamTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(ServerOptions{}); }
  void Start(ServerOptions options, int threads = 2) {
    server_ = std::make_unique<Server>();
    options.num_threads = threads;
    ASSERT_EQ(0, server_->AddService(&service_, SERVER_DOESNT_OWN_SERVICE));
    ASSERT_EQ(0, server_->Start("127.0.0.1:0", options)) << server_->last_error();
    port_ = server_->listen_port();
  }
  void TearDown() override { server_.reset(); }

  std::unique_ptr<Channel> MakeChannel() {
    auto channel = std::make_unique<Channel>();
    ChannelOptions options;
    options.timeout_ms = 10000;
    EXPECT_EQ(0, channel->Init("127.0.0.1:" + std::to_string(port_), &options));
    return channel;
  }

  // Makes the call `what` offering a stream (read by end->recorder when `read`); returns its id.
  StreamId Open(Channel& channel, const std::string& what, ClientEnd* end,
                StreamOptions options = {}, bool read = true) {
    if (read) options.handler = &end->recorder;
    EXPECT_EQ(0, StreamCreate(&end->id, end->cntl, &options));
    TestRequest request;
    request.set_message(what);
    TestService_Stub(&channel).Echo(&end->cntl, &request, &end->response, nullptr);
    return end->id;
  }

  StreamService service_;
  std::unique_ptr<Server> server_;
  int port_ = 0;
};

TEST_F(StreamTest, EchoKeepsOrderBothWays) {
  auto channel = MakeChannel();
  ClientEnd end;
  StreamOptions options;
  const StreamId id = Open(*channel, "echo", &end, options);
  ASSERT_FALSE(end.cntl.Failed()) << end.cntl.ErrorText();
  EXPECT_EQ("echo", end.response.message());
  constexpr int kMessages = 200;
  for (int i = 0; i < kMessages; ++i) {
    ASSERT_EQ(0, StreamWrite(id, Message("hello " + std::to_string(i))));
  }
  ASSERT_TRUE(end.recorder.WaitForMessages(kMessages));
  const auto got = end.recorder.received();
  ASSERT_EQ(size_t{kMessages}, got.size());
  for (int i = 0; i < kMessages; ++i) EXPECT_EQ("hello " + std::to_string(i), got[i]);
  EXPECT_EQ(got, service_.server_side.received());
  // The client closes: both sides see on_closed, no failure.
  EXPECT_EQ(0, StreamClose(id));
  EXPECT_TRUE(end.recorder.WaitForClosed());
  EXPECT_TRUE(service_.server_side.WaitForClosed());
  EXPECT_EQ(0, service_.server_side.failed_code.load());
  EXPECT_EQ(EINVAL, StreamWrite(id, Message("late")));
  EXPECT_EQ(EINVAL, StreamWrite(service_.last_id.load(), Message("late")));
}

// Writes made before the stream connects (the client's before its call, the server's before its
// reply) are held and go out in order once it does.
TEST_F(StreamTest, WritesBeforeConnectingAreHeldInOrder) {
  auto channel = MakeChannel();
  ClientEnd end;
  StreamOptions options;
  options.handler = &end.recorder;
  ASSERT_EQ(0, StreamCreate(&end.id, end.cntl, &options));
  ASSERT_EQ(0, StreamWrite(end.id, Message("a")));
  ASSERT_EQ(0, StreamWrite(end.id, Message("b")));
  TestRequest request;
  request.set_message("early");
  TestService_Stub(channel.get()).Echo(&end.cntl, &request, &end.response, nullptr);
  ASSERT_FALSE(end.cntl.Failed()) << end.cntl.ErrorText();
  ASSERT_TRUE(end.recorder.WaitForMessages(3));
  EXPECT_EQ((std::vector<std::string>{"before the reply", "a", "b"}), end.recorder.received());
  EXPECT_EQ((std::vector<std::string>{"a", "b"}), service_.server_side.received());
  StreamClose(end.id);
  EXPECT_TRUE(end.recorder.WaitForClosed());
}

TEST_F(StreamTest, ServerPushesInOrderThenCloses) {
  auto channel = MakeChannel();
  ClientEnd end;
  StreamOptions options;
  options.max_buf_size = 4096;  // the server's writer is bounded by its own window, not ours
  const int n = 5000;
  Open(*channel, "push:" + std::to_string(n), &end, options);
  ASSERT_FALSE(end.cntl.Failed()) << end.cntl.ErrorText();
  ASSERT_TRUE(end.recorder.WaitForClosed(30s));  // the server closed after the last one
  const auto got = end.recorder.received();
  ASSERT_EQ(size_t(n), got.size());
  for (int i = 0; i < n; ++i) ASSERT_EQ("m" + std::to_string(i), got[i]);
  EXPECT_EQ(0, end.recorder.failed_code.load());
}

TEST_F(StreamTest, SlowReaderBoundsTheWriter) {
  auto channel = MakeChannel();
  ClientEnd end;
  StreamOptions options;
  options.max_buf_size = 64 << 10;
  const StreamId id = Open(*channel, "hold", &end, options);
  ASSERT_FALSE(end.cntl.Failed()) << end.cntl.ErrorText();
  const std::string kilobyte(1024, 'x');
  size_t written = 0;
  int rc = 0;
  while ((rc = StreamWrite(id, Message(kilobyte))) == 0) {
    written += kilobyte.size();
    ASSERT_LE(written, size_t{(64 << 10) + 1024}) << "the window did not close";
  }
  EXPECT_EQ(EAGAIN, rc);
  EXPECT_GE(written, size_t{64 << 10});
  // Still full: a short wait times out.
  timespec soon{};
  clock_gettime(CLOCK_REALTIME, &soon);
  soon.tv_nsec += 50'000'000;
  if (soon.tv_nsec >= 1'000'000'000) soon.tv_sec += 1, soon.tv_nsec -= 1'000'000'000;
  EXPECT_EQ(ETIMEDOUT, StreamWait(id, &soon));
  // The reader consumes: feedback reopens the window.
  service_.server_side.hold = false;
  EXPECT_EQ(0, StreamWait(id, nullptr));
  EXPECT_EQ(0, StreamWrite(id, Message(kilobyte)));
  EXPECT_TRUE(service_.server_side.WaitForMessages(written / 1024 + 1));
  StreamClose(id);
  EXPECT_TRUE(service_.server_side.WaitForClosed());
  EXPECT_TRUE(end.recorder.WaitForClosed());  // its handler must outlive the stream
}

TEST_F(StreamTest, IdleTimeoutFiresWhileNothingArrives) {
  auto channel = MakeChannel();
  ClientEnd end;
  StreamOptions options;
  options.idle_timeout_ms = 30;
  const StreamId id = Open(*channel, "echo", &end, options);
  ASSERT_FALSE(end.cntl.Failed()) << end.cntl.ErrorText();
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (end.recorder.idle_timeouts.load() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_GE(end.recorder.idle_timeouts.load(), 2);
  StreamClose(id);
  EXPECT_TRUE(end.recorder.WaitForClosed());  // its handler must outlive the stream
}

TEST_F(StreamTest, FailedCallDoesNotAcceptTheStream) {
  auto channel = MakeChannel();
  ClientEnd end;
  StreamOptions options;
  const StreamId id = Open(*channel, "fail", &end, options);
  ASSERT_TRUE(end.cntl.Failed());
  EXPECT_EQ(EINVAL, end.cntl.ErrorCode());
  EXPECT_TRUE(end.recorder.WaitForClosed());
  EXPECT_EQ(EINVAL, end.recorder.failed_code.load());
  EXPECT_EQ(EINVAL, StreamWrite(id, Message("x")));
  EXPECT_TRUE(service_.server_side.WaitForClosed());  // the server's accepted stream ended too
}

// As brpc's client: a call that offered a stream the server did not accept fails with
// EREQUEST "The server didn't accept the stream", and its stream fails with it.
TEST_F(StreamTest, StreamNotAcceptedFailsTheCall) {
  auto channel = MakeChannel();
  ClientEnd end;
  StreamOptions options;
  const StreamId id = Open(*channel, "none", &end, options);
  ASSERT_TRUE(end.cntl.Failed());
  EXPECT_EQ(EREQUEST, end.cntl.ErrorCode());
  EXPECT_NE(std::string::npos, end.cntl.ErrorText().find("The server didn't accept the stream"))
      << end.cntl.ErrorText();
  EXPECT_TRUE(end.recorder.WaitForClosed());
  EXPECT_EQ(EREQUEST, end.recorder.failed_code.load());
  EXPECT_EQ(EINVAL, StreamWrite(id, Message("x")));
  // The connection serves on.
  Controller cntl;
  TestRequest request;
  request.set_message("plain");
  TestResponse response;
  TestService_Stub(channel.get()).Echo(&cntl, &request, &response, nullptr);
  EXPECT_FALSE(cntl.Failed()) << cntl.ErrorText();
}

TEST_F(StreamTest, ConnectionLossFailsBothEnds) {
  auto channel = MakeChannel();
  ClientEnd end;
  StreamOptions options;
  const StreamId id = Open(*channel, "echo", &end, options);
  ASSERT_FALSE(end.cntl.Failed()) << end.cntl.ErrorText();
  channel.reset();  // closes the connection under the open stream
  EXPECT_TRUE(service_.server_side.WaitForClosed());
  EXPECT_NE(0, service_.server_side.failed_code.load());
  EXPECT_TRUE(end.recorder.WaitForClosed());
  EXPECT_NE(0, end.recorder.failed_code.load());
  EXPECT_EQ(EINVAL, StreamWrite(id, Message("x")));
}

// Spec §9: a frame for a stream the receiver does not have, naming its sender, is answered with
// RST to the sender; the connection stays usable.
TEST_F(StreamTest, UnknownStreamGetsRstBytes) {
  RawClient raw(port_);
  ASSERT_TRUE(raw.connected());
  // "STRM", body_size 6, meta_size 6, StreamFrameMeta{stream_id=999, source_stream_id=77,
  // frame_type=DATA}; data "" — written out by hand from the spec.
  const std::string data_frame("STRM\0\0\0\x07\0\0\0\x07\x08\xe7\x07\x10\x4d\x18\x03", 19);
  raw.SendBytes(data_frame);
  std::string frame;
  ASSERT_TRUE(raw.ReadFrameBytes(&frame));
  // RST: StreamFrameMeta{stream_id=77, frame_type=RST}.
  EXPECT_EQ(std::string("STRM\0\0\0\x04\0\0\0\x04\x08\x4d\x18\x01", 16), frame);
  // Our encoder produces the same bytes.
  protocol::StreamFrameMeta meta;
  meta.set_stream_id(77);
  meta.set_frame_type(protocol::FRAME_TYPE_RST);
  net::BufferChain encoded;
  protocol::EncodeStreamFrame(meta, net::BufferChain(), &encoded);
  EXPECT_EQ(frame, encoded.to_string());
  TestRequest request;
  request.set_message("none");
  RawReply reply = raw.Call(RequestFor(&request));
  EXPECT_EQ(0, reply.error_code);
}

// The accepting reply travels inside a DATA frame to the client's stream (spec §9).
TEST_F(StreamTest, AcceptingReplyIsWrappedInData) {
  RawClient raw(port_);
  raw.SendBytes(StreamCallFrame("echo", 5, 4242, /*need_feedback=*/true));
  std::string bytes;
  ASSERT_TRUE(raw.ReadFrameBytes(&bytes));
  protocol::StreamFrame frame;
  ASSERT_TRUE(DecodeStreamFrame(bytes, &frame));
  EXPECT_EQ(4242, frame.meta.stream_id());
  EXPECT_EQ(protocol::FRAME_TYPE_DATA, frame.meta.frame_type());
  const int64_t server_stream = frame.meta.source_stream_id();
  protocol::FrameDecoder rpc;
  protocol::Frame reply;
  ASSERT_EQ(protocol::DecodeStatus::kFrame, rpc.Next(frame.data, &reply));
  EXPECT_EQ(5, reply.meta.correlation_id());
  EXPECT_EQ(server_stream, reply.meta.stream_settings().stream_id());
  EXPECT_TRUE(reply.meta.stream_settings().writable());
  EXPECT_TRUE(reply.meta.stream_settings().need_feedback());
  // Data to the server's stream is echoed back to ours; its consumption is acknowledged.
  raw.SendBytes(DataFrameBytes(server_stream, 4242, "ping"));
  bool echoed = false, fed_back = false;
  for (int i = 0; i < 2 && raw.ReadFrameBytes(&bytes); ++i) {
    protocol::StreamFrame f;
    ASSERT_TRUE(DecodeStreamFrame(bytes, &f));
    EXPECT_EQ(4242, f.meta.stream_id());
    EXPECT_EQ(server_stream, f.meta.source_stream_id());
    if (f.meta.frame_type() == protocol::FRAME_TYPE_DATA) {
      EXPECT_EQ("ping", f.data.to_string());
      echoed = true;
    } else if (f.meta.frame_type() == protocol::FRAME_TYPE_FEEDBACK) {
      EXPECT_EQ(4, f.meta.feedback().consumed_size());
      fed_back = true;
    }
  }
  EXPECT_TRUE(echoed);
  EXPECT_TRUE(fed_back);
}

// Issue 39's hostile stream peers, in heap, reuse and auto: each test starts the server with
// StartAttacked, which starts a good baidu_std client on its own connection and measures its
// unattacked p99 for half a second; from then to the end of the test the good client keeps 0
// failures and a p99 within 5x that (ExpectKeptUp), and the process's peak resident growth stays
// within the bound docs/server.md states for `attackers_` connections with the test's options.
class StreamHostileTest : public StreamTest, public ::testing::WithParamInterface<const char*> {
 protected:
  void SetUp() override {}  // each test starts its server (StartAttacked)
  void StartAttacked(ServerOptions options) {
    options.memory_mode = GetParam();
    // Small enough that the stated bound is tight next to the attacks' hundreds of MB.
    options.max_body_size = 1u << 20;
    options.max_queued_request_bytes = 4u << 20;
    options.max_stream_unconsumed_bytes = 4u << 20;
    if (options.max_unwritten_bytes == ServerOptions{}.max_unwritten_bytes) {
      options.max_unwritten_bytes = 4u << 20;
    }
    options.memory.reuse.max_pool_bytes = 8u << 20;
    options_ = options;
    Start(options, threads_);
    good_ = std::make_unique<GoodClient>(MakeChannel());
    meter_.Begin(good_.get());
  }
  void TearDown() override {
    if (good_) {
      meter_.Finish(uint64_t(attackers_) * BaiduStdConnectionBound(options_, attack_replies_) +
                        BaiduStdConnectionBound(options_) + ProcessCachesBound(options_, 4),
                    GetParam());
      good_.reset();
    }
    StreamTest::TearDown();
  }
  ServerOptions options_;
  std::unique_ptr<GoodClient> good_;
  AttackMeter meter_;
  // Issue 39's rows are against a one-I/O-thread server.
  int threads_ = 1;
  int attackers_ = 1;            // attacking connections
  uint64_t attack_replies_ = 0;  // what handlers write to one of them
};
INSTANTIATE_TEST_SUITE_P(Modes, StreamHostileTest, ::testing::Values("heap", "reuse", "auto"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

// Hostile peers: one floods an accepted stream without waiting for feedback (it is reset once
// past max_unconsumed_bytes), one floods unknown stream ids without reading the RSTs, one opens
// more streams than max_streams_per_connection; a good client keeps 0 errors meanwhile.
TEST_P(StreamHostileTest, HostilePeersAreBoundedWhileAGoodClientKeepsWorking) {
  ServerOptions options;
  options.max_streams_per_connection = 4;
  attackers_ = 3;
  StartAttacked(options);

  // 1. Flood an accepted stream whose reader holds everything.
  RawClient flooder(port_);
  const int64_t server_stream = OpenRawStream(flooder, "small", 7, /*need_feedback=*/false);
  ASSERT_GT(server_stream, 0);
  std::string bytes;
  const std::string chunk(8 << 10, 'f');
  std::string flood;
  for (int i = 0; i < 64; ++i) flood += DataFrameBytes(server_stream, 7, chunk);  // 512 KiB
  flooder.SendBytes(flood);
  bool reset = false;
  while (!reset && flooder.ReadFrameBytes(&bytes, 5s)) {
    protocol::StreamFrame f;
    ASSERT_TRUE(DecodeStreamFrame(bytes, &f));
    reset = f.meta.frame_type() == protocol::FRAME_TYPE_RST && f.meta.stream_id() == 7;
  }
  EXPECT_TRUE(reset);
  service_.server_side.hold = false;
  EXPECT_TRUE(service_.server_side.WaitForClosed());
  EXPECT_EQ(EOVERCROWDED, service_.server_side.failed_code.load());
  // At most the bound was delivered (then the stream was reset and its data dropped).
  EXPECT_LE(service_.server_side.received().size(), size_t{(64 << 10) / (8 << 10)});

  // 2. Unknown ids, never reading: the server answers while its output has room, then drops.
  // Connection after connection for half the attack time (the good client's window under
  // attack holds a few hundred calls).
  std::string spam;
  for (int i = 0; i < 20000; ++i) spam += DataFrameBytes(1'000'000 + i, i + 1, "");
  RepeatAttack([&] {
    RawClient spammer(port_);
    spammer.SendBytes(spam);
    // The connection stays: a call on it is answered behind at most one RST per spam frame.
    TestRequest plain;
    plain.set_message("plain");
    spammer.Send(RequestFor(&plain));
    int rsts = 0;
    bool answered = false;
    while (!answered && spammer.ReadFrameBytes(&bytes)) {
      if (bytes.compare(0, 4, "PRPC") == 0) {
        answered = true;
      } else {
        protocol::StreamFrame f;
        ASSERT_TRUE(DecodeStreamFrame(bytes, &f));
        ASSERT_EQ(protocol::FRAME_TYPE_RST, f.meta.frame_type());
        ++rsts;
      }
    }
    EXPECT_TRUE(answered);
    EXPECT_LE(rsts, 20000);
  }, kAttackTime / 2);

  // 3. More streams than the connection may hold.
  auto channel = MakeChannel();
  std::vector<std::unique_ptr<ClientEnd>> ends;
  int ok = 0;
  for (int i = 0; i < 8; ++i) {
    ends.push_back(std::make_unique<ClientEnd>());
    Open(*channel, "echo", ends.back().get(), {}, /*read=*/false);
    if (!ends.back()->cntl.Failed()) ++ok;
  }
  EXPECT_EQ(4, ok);
  EXPECT_GE(service_.refused.load(), 4);

  std::this_thread::sleep_for(200ms);
}

// Empty DATA frames to a stream whose reader holds its batches: no window counts an empty
// message, but each queued one is charged its overhead against the connection's
// max_stream_unconsumed_bytes (4 MiB here), so the flood is reset after ~32,000 messages instead
// of queueing all 300,000 (~40 MB held before).
TEST_P(StreamHostileTest, EmptyMessagesNotConsumedAreChargedTheirOverhead) {
  // Run alone (SERIAL_TESTS): beside the release suite (load average 6-7 on 2 cores) the one
  // thread waited for a core and the good client's p99 passed its bound in 3 of 30 runs.
  StartAttacked(ServerOptions{});
  // Round after round (a new connection each) for the attack time.
  RepeatAttack([&] {
    service_.server_side.Reset();
    RawClient flooder(port_);
    const int64_t server_stream = OpenRawStream(flooder, "hold", 7, /*need_feedback=*/false);
    ASSERT_GT(server_stream, 0);
    const std::string empty = DataFrameBytes(server_stream, 7, "");
    std::string flood;
    flood.reserve(empty.size() * 10000);
    for (int i = 0; i < 10000; ++i) flood += empty;
    bool reset = false;
    std::string bytes;
    for (int round = 0; round < 30 && !reset; ++round) {
      flooder.SendBytes(flood);
      while (!reset && flooder.ReadFrameBytes(&bytes, 10ms)) {
        protocol::StreamFrame f;
        ASSERT_TRUE(DecodeStreamFrame(bytes, &f));
        reset = f.meta.frame_type() == protocol::FRAME_TYPE_RST && f.meta.stream_id() == 7;
      }
    }
    while (!reset && flooder.ReadFrameBytes(&bytes, 5s)) {
      protocol::StreamFrame f;
      ASSERT_TRUE(DecodeStreamFrame(bytes, &f));
      reset = f.meta.frame_type() == protocol::FRAME_TYPE_RST && f.meta.stream_id() == 7;
    }
    EXPECT_TRUE(reset) << "300,000 empty messages queued without a bound";
    service_.server_side.hold = false;
    EXPECT_TRUE(service_.server_side.WaitForClosed());
    EXPECT_EQ(EOVERCROWDED, service_.server_side.failed_code.load());
    // What reached the handler fits the connection's bound at 128 bytes a message.
    EXPECT_LE(service_.server_side.received().size(), size_t{(4u << 20) / 128});
  });
}

// brpc's contract: a failed StreamAccept never calls the handler it was given (code ported from
// brpc deletes it on failure; calling it crashed such servers).
TEST_P(StreamHostileTest, RefusedStreamAcceptNeverCallsItsHandler) {
  ServerOptions options;
  options.max_streams_per_connection = 2;
  StartAttacked(options);
  // Each round: a new connection offers 6 streams; 2 are accepted, 4 refused.
  const int rounds = RepeatAttack([&] {
    const size_t refused_before = service_.refused_handlers.size();
    auto channel = MakeChannel();
    std::vector<std::unique_ptr<ClientEnd>> ends;
    int ok = 0;
    for (int i = 0; i < 6; ++i) {
      ends.push_back(std::make_unique<ClientEnd>());
      Open(*channel, "own", ends.back().get());
      if (!ends.back()->cntl.Failed()) ++ok;
    }
    EXPECT_EQ(2, ok);
    std::this_thread::sleep_for(100ms);  // a turn posted for a refused stream would have run
    std::lock_guard lock(service_.handlers_mutex);
    ASSERT_EQ(refused_before + 4, service_.refused_handlers.size());
    for (const auto& handler : service_.refused_handlers) {
      EXPECT_FALSE(handler->closed());
      EXPECT_EQ(0, handler->failed_code.load());
      EXPECT_TRUE(handler->received().empty());
    }
    for (auto& end : ends) {
      if (!end->cntl.Failed()) StreamClose(end->id);
      EXPECT_TRUE(end->recorder.WaitForClosed());  // every client stream ended before its handler
    }
    for (const auto& handler : service_.accepted_handlers) EXPECT_TRUE(handler->WaitForClosed());
  });
  EXPECT_EQ(4 * rounds, service_.refused.load());
}

// A FEEDBACK may acknowledge only bytes written: one claiming 2^62 consumed fails the stream
// (EPROTO, the peer gets RST) instead of opening the writer's window for good.
TEST_P(StreamHostileTest, FeedbackAcknowledgingUnwrittenBytesFailsTheStream) {
  StartAttacked(ServerOptions{});
  // Each round: a new connection opens an echo stream and lies in a FEEDBACK.
  RepeatAttack([&] {
    service_.server_side.Reset();
    RawClient raw(port_);
    const int64_t server_stream = OpenRawStream(raw, "echo", 7, /*need_feedback=*/true);
    ASSERT_GT(server_stream, 0);
    std::string bytes;
    // One message echoed (4 bytes written): an honest FEEDBACK of 4 is taken.
    raw.SendBytes(DataFrameBytes(server_stream, 7, "ping"));
    auto feedback = [&](int64_t consumed) {
      protocol::StreamFrameMeta meta;
      meta.set_stream_id(server_stream);
      meta.set_source_stream_id(7);
      meta.set_frame_type(protocol::FRAME_TYPE_FEEDBACK);
      meta.mutable_feedback()->set_consumed_size(consumed);
      net::BufferChain wire;
      protocol::EncodeStreamFrame(meta, net::BufferChain(), &wire);
      raw.SendBytes(wire.to_string());
    };
    bool echoed = false;
    while (!echoed && raw.ReadFrameBytes(&bytes, 5s)) {
      protocol::StreamFrame f;
      ASSERT_TRUE(DecodeStreamFrame(bytes, &f));
      echoed = f.meta.frame_type() == protocol::FRAME_TYPE_DATA;
    }
    ASSERT_TRUE(echoed);
    feedback(4);
    feedback(int64_t{1} << 62);
    bool reset = false;
    while (!reset && raw.ReadFrameBytes(&bytes, 5s)) {
      protocol::StreamFrame f;
      ASSERT_TRUE(DecodeStreamFrame(bytes, &f));
      reset = f.meta.frame_type() == protocol::FRAME_TYPE_RST && f.meta.stream_id() == 7;
    }
    EXPECT_TRUE(reset);
    EXPECT_TRUE(service_.server_side.WaitForClosed());
    EXPECT_EQ(EPROTO, service_.server_side.failed_code.load());
    EXPECT_EQ(EINVAL, StreamWrite(service_.last_id.load(), Message("late")));
  });
}

// A writer with no window against a peer that never reads: StreamWrite is refused once the
// connection holds max_unwritten_bytes unsent, StreamWait waits for the drain, and every message
// StreamWrite accepted arrives, then CLOSE. A good client on another connection keeps 0 errors.
TEST_P(StreamHostileTest, WritesPastTheConnectionsUnsentBoundAreRefusedAndNothingIsLost) {
  ServerOptions options;
  options.max_unwritten_bytes = 1 << 20;
  attack_replies_ = 16 << 10;  // the message that crosses the bound
  StartAttacked(options);
  RawClient raw(port_);
  raw.SendBytes(StreamCallFrame("flood", 1, 7, /*need_feedback=*/false));
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (service_.flood_wait_while_full.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(EOVERCROWDED, service_.flood_refusal.load());
  EXPECT_EQ(ETIMEDOUT, service_.flood_wait_while_full.load());
  // The peer goes on not reading for half the attack time, the writer held at the bound.
  std::this_thread::sleep_for(kAttackTime / 2);
  // Held by the server: at most the bound plus one message; the kernel's socket buffers take the
  // rest of what was accepted (loopback: a few MiB).
  const int64_t accepted_bytes = service_.flood_messages.load() * (16 << 10);
  EXPECT_GE(accepted_bytes, int64_t{1} << 20);
  EXPECT_LE(accepted_bytes, int64_t{64} << 20) << "the connection's bound did not hold";
  service_.flood_drain = true;
  int64_t data_frames = 0;
  bool last = false, closed = false;
  std::string bytes;
  while (!closed && raw.ReadFrameBytes(&bytes, 10s)) {
    if (bytes.compare(0, 4, "STRM") != 0) continue;  // the call's reply is inside the first DATA
    protocol::StreamFrame f;
    ASSERT_TRUE(DecodeStreamFrame(bytes, &f));
    if (f.meta.frame_type() == protocol::FRAME_TYPE_DATA) {
      if (f.data.to_string() == "last") {
        last = true;
      } else if (f.data.size() == size_t{16 << 10}) {
        ++data_frames;
      }
    } else if (f.meta.frame_type() == protocol::FRAME_TYPE_CLOSE) {
      closed = true;
    }
  }
  EXPECT_EQ(0, service_.flood_wait_after.load());
  // The writer's fiber marks itself done after StreamClose() returned (after the CLOSE went).
  const auto done_by = std::chrono::steady_clock::now() + 10s;
  while (!service_.flood_done.load() && std::chrono::steady_clock::now() < done_by) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_TRUE(service_.flood_done.load());
  EXPECT_EQ(service_.flood_messages.load(), data_frames);
  EXPECT_TRUE(last);
  EXPECT_TRUE(closed);
}

// A stream closed before it connected (writes and StreamClose before the reply is written) sends
// what it holds, then CLOSE.
TEST_F(StreamTest, ClosingAPendingStreamSendsItsHeldWritesThenClose) {
  auto channel = MakeChannel();
  ClientEnd end;
  Open(*channel, "pending-close", &end);
  ASSERT_FALSE(end.cntl.Failed()) << end.cntl.ErrorText();
  ASSERT_TRUE(end.recorder.WaitForClosed());
  EXPECT_EQ((std::vector<std::string>{"a", "b", "c"}), end.recorder.received());
  EXPECT_EQ(0, end.recorder.failed_code.load());
  EXPECT_TRUE(service_.server_side.WaitForClosed());
  EXPECT_EQ(0, service_.server_side.failed_code.load());
}

// The close race: the server echoes N messages and closes inside its receive callback, which may
// run before the stream has connected (the client writes as soon as the reply arrives). Every
// message comes back and the CLOSE follows, on 1, 2 and 4 I/O threads.
TEST_F(StreamTest, EchoAndCloseInsideTheReceiveCallbackLosesNothing) {
  constexpr int kMessages = 50;
  for (int threads : {1, 2, 4}) {
    TearDown();
    Start(ServerOptions{}, threads);
    auto channel = MakeChannel();
    // ARENARPC_STREAM_RACE_RUNS overrides the 1,000 runs per thread count.
    const char* runs_env = std::getenv("ARENARPC_STREAM_RACE_RUNS");
    const int runs = runs_env != nullptr ? std::atoi(runs_env) : 1000;
    for (int run = 0; run < runs; ++run) {
      ClientEnd end;
      const StreamId id = Open(*channel, "close:" + std::to_string(kMessages), &end);
      ASSERT_FALSE(end.cntl.Failed()) << end.cntl.ErrorText();
      for (int i = 0; i < kMessages; ++i) {
        ASSERT_EQ(0, StreamWrite(id, Message(std::to_string(i))));
      }
      ASSERT_TRUE(end.recorder.WaitForClosed(10s))
          << "threads " << threads << " run " << run << ": no CLOSE after "
          << end.recorder.received().size() << " messages";
      const auto got = end.recorder.received();
      ASSERT_EQ(size_t{kMessages}, got.size()) << "threads " << threads << " run " << run;
      for (int i = 0; i < kMessages; ++i) ASSERT_EQ(std::to_string(i), got[i]);
      ASSERT_EQ(0, end.recorder.failed_code.load());
    }
    std::lock_guard lock(service_.handlers_mutex);
    for (const auto& closer : service_.closers) {
      const auto until = std::chrono::steady_clock::now() + 10s;
      while (!closer->closed.load() && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(1ms);
      }
      EXPECT_TRUE(closer->closed.load());
      EXPECT_EQ(0, closer->write_failures.load());
    }
    service_.closers.clear();
  }
}

}  // namespace
}  // namespace arenarpc::e2e
