// One baidu_std stream (src/stream) alone: a Stream bound to a StreamHost whose connection is a
// loopback socket the test reads raw "STRM" frames from, and frames from the "peer" handed to the
// host as the connection's reader would. No server, no call, no client library.
#include <gtest/gtest.h>

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/stream.h"
#include "net/connection.h"
#include "protocol/stream_frame.h"
#include "stream/stream.h"
#include "stream/stream_host.h"

namespace arenarpc::stream {
namespace {

using namespace std::chrono_literals;
using protocol::StreamFrame;

// The connection's delegate: the test plays the peer by hand, so nothing is read here.
class IdleDelegate : public net::Connection::Delegate {
 public:
  net::Connection::InputResult OnInput(net::Connection&, net::BufferChain& input,
                                       net::Connection::Clock::time_point) override {
    input.clear();
    return {};
  }
  void OnClosed(net::Connection&) override {}
};

// What the stream's handler was told.
class RecordingHandler : public StreamInputHandler {
 public:
  int on_received_messages(StreamId, IOBuf* const messages[], size_t size) override {
    std::lock_guard lock(mutex_);
    for (size_t i = 0; i < size; ++i) received_.push_back(messages[i]->to_string());
    changed_.notify_all();
    return 0;
  }
  void on_idle_timeout(StreamId) override {}
  void on_closed(StreamId) override {
    std::lock_guard lock(mutex_);
    closed_ = true;
    changed_.notify_all();
  }
  void on_failed(StreamId, int code, const std::string& text) override {
    std::lock_guard lock(mutex_);
    failed_code_ = code;
    failed_text_ = text;
    changed_.notify_all();
  }
  template <class Pred>
  bool WaitFor(Pred pred) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, 5s, pred);
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> received_;
  bool closed_ = false;
  int failed_code_ = 0;
  std::string failed_text_;
};

constexpr int64_t kPeerStream = 777;

class StreamTest : public ::testing::Test {
 protected:
  StreamTest() : work_(asio::make_work_guard(io_)), thread_([this] { io_.run(); }) {
    asio::ip::tcp::acceptor acceptor(io_, {asio::ip::make_address("127.0.0.1"), 0});
    peer_.connect(acceptor.local_endpoint());
    asio::ip::tcp::socket accepted(io_);
    acceptor.accept(accepted);
    connection_ = net::Connection::Create(std::move(accepted), std::make_unique<IdleDelegate>(),
                                          {});
    connection_->Start();
    host_ = std::make_shared<StreamHost>(connection_, io_.get_executor(),
                                         // turns run later, as on a client's I/O executor
                                         // (a stream schedules one with its lock held)
                                         [this](std::function<void()> turn) {
                                           asio::post(io_, std::move(turn));
                                         },
                                         StreamHost::Limits{}, /*client_side=*/false);
  }
  ~StreamTest() override {
    host_->Close(EEOF, "test over");
    connection_->Close();
    work_.reset();
    io_.stop();
    thread_.join();
  }

  // A server-side stream: the peer's settings are known, it is bound, not yet connected.
  std::shared_ptr<Stream> Accept(int64_t max_buf_size) {
    protocol::StreamSettings remote;
    remote.set_stream_id(kPeerStream);
    remote.set_need_feedback(true);
    remote.set_writable(true);
    StreamOptions options;
    options.max_buf_size = max_buf_size;
    options.handler = &handler_;
    std::shared_ptr<Stream> stream = Stream::Create(options, &remote);
    EXPECT_TRUE(stream->Bind(host_));
    return stream;
  }

  // The next "STRM" frame the stream's side wrote.
  StreamFrame ReadFrame() {
    for (;;) {
      StreamFrame frame;
      if (input_.size() >= 4 &&
          decoder_.Next(input_, &frame) == protocol::DecodeStatus::kFrame) {
        return frame;
      }
      char buf[4096];
      const size_t n = peer_.read_some(asio::buffer(buf));
      input_.Append(std::string_view(buf, n));
    }
  }

  // A frame from the peer, as the connection's reader hands it over.
  void FromPeer(protocol::FrameType type, const std::shared_ptr<Stream>& stream,
                int64_t consumed = 0, std::string data = "") {
    StreamFrame frame;
    frame.meta.set_stream_id(static_cast<int64_t>(stream->id()));
    frame.meta.set_source_stream_id(kPeerStream);
    frame.meta.set_frame_type(type);
    if (type == protocol::FRAME_TYPE_FEEDBACK) {
      frame.meta.mutable_feedback()->set_consumed_size(consumed);
    }
    frame.data.Append(data);
    net::BufferChain reply;
    host_->Dispatch(std::move(frame), &reply);
  }

  static int Write(Stream& stream, const std::string& message) {
    net::BufferChain chain;
    chain.Append(message);
    return stream.Write(chain);
  }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
  asio::io_context peer_io_;
  asio::ip::tcp::socket peer_{peer_io_};
  std::shared_ptr<net::Connection> connection_;
  std::shared_ptr<StreamHost> host_;
  RecordingHandler handler_;
  protocol::StreamFrameDecoder decoder_;
  net::BufferChain input_;
};

TEST_F(StreamTest, WritesGoOutAsDataFramesAndTheWindowClosesUntilFeedbackOpensIt) {
  std::shared_ptr<Stream> stream = Accept(/*max_buf_size=*/1000);
  stream->Connect(nullptr);
  EXPECT_EQ(0, Write(*stream, std::string(600, 'a')));
  EXPECT_EQ(0, Write(*stream, std::string(600, 'b')));  // the window had room: brpc's rule
  EXPECT_EQ(EAGAIN, Write(*stream, "c"));               // 1200 unacknowledged >= 1000
  for (char c : {'a', 'b'}) {
    StreamFrame frame = ReadFrame();
    EXPECT_EQ(kPeerStream, frame.meta.stream_id());
    EXPECT_EQ(static_cast<int64_t>(stream->id()), frame.meta.source_stream_id());
    EXPECT_EQ(protocol::FRAME_TYPE_DATA, frame.meta.frame_type());
    EXPECT_EQ(std::string(600, c), frame.data.ToString());
  }
  FromPeer(protocol::FRAME_TYPE_FEEDBACK, stream, /*consumed=*/600);
  EXPECT_EQ(0, Write(*stream, "c"));  // 600 unacknowledged now
  EXPECT_EQ("c", ReadFrame().data.ToString());
}

TEST_F(StreamTest, FeedbackAcknowledgingMoreThanWasSentFailsTheStreamOnBothSides) {
  std::shared_ptr<Stream> stream = Accept(/*max_buf_size=*/1000);
  stream->Connect(nullptr);
  ASSERT_EQ(0, Write(*stream, std::string(100, 'x')));
  ReadFrame();
  FromPeer(protocol::FRAME_TYPE_FEEDBACK, stream, /*consumed=*/int64_t{1} << 62);
  ASSERT_TRUE(handler_.WaitFor([&] { return handler_.failed_code_ != 0 && handler_.closed_; }));
  EXPECT_EQ(EPROTO, handler_.failed_code_) << handler_.failed_text_;
  EXPECT_EQ(protocol::FRAME_TYPE_RST, ReadFrame().meta.frame_type());  // the peer hears it
  EXPECT_EQ(EINVAL, Write(*stream, "after"));
}

TEST_F(StreamTest, ClosingAPendingStreamSendsItsHeldWritesThenTheClose) {
  std::shared_ptr<Stream> stream = Accept(/*max_buf_size=*/0);
  for (int i = 0; i < 5; ++i) ASSERT_EQ(0, Write(*stream, "held " + std::to_string(i)));
  stream->Terminate(0, "", /*send_close=*/true);  // StreamClose() before the reply went out
  stream->Connect(nullptr);                       // the call's reply is sent
  for (int i = 0; i < 5; ++i) {
    StreamFrame frame = ReadFrame();
    ASSERT_EQ(protocol::FRAME_TYPE_DATA, frame.meta.frame_type());
    EXPECT_EQ("held " + std::to_string(i), frame.data.ToString());
  }
  EXPECT_EQ(protocol::FRAME_TYPE_CLOSE, ReadFrame().meta.frame_type());
  EXPECT_TRUE(handler_.WaitFor([&] { return handler_.closed_; }));
  EXPECT_EQ(0, handler_.failed_code_);
}

TEST_F(StreamTest, ReceivedMessagesReachTheHandlerInOrderAndAreAcknowledged) {
  std::shared_ptr<Stream> stream = Accept(/*max_buf_size=*/1000);
  stream->Connect(nullptr);
  for (int i = 0; i < 20; ++i) {
    FromPeer(protocol::FRAME_TYPE_DATA, stream, 0, "m" + std::to_string(i));
  }
  ASSERT_TRUE(handler_.WaitFor([&] { return handler_.received_.size() == 20; }));
  for (int i = 0; i < 20; ++i) EXPECT_EQ("m" + std::to_string(i), handler_.received_[i]);
  // The peer asked for feedback: consumed bytes come back, cumulative, up to all 20 messages.
  int64_t consumed = 0;
  while (consumed < 20 * 2 + 10) {  // "m0".."m9" 2 bytes, "m10".."m19" 3 bytes: 50 in all
    StreamFrame frame = ReadFrame();
    ASSERT_EQ(protocol::FRAME_TYPE_FEEDBACK, frame.meta.frame_type());
    EXPECT_GT(frame.meta.feedback().consumed_size(), consumed);
    consumed = frame.meta.feedback().consumed_size();
  }
  EXPECT_EQ(50, consumed);
  FromPeer(protocol::FRAME_TYPE_CLOSE, stream);
  EXPECT_TRUE(handler_.WaitFor([&] { return handler_.closed_; }));
  EXPECT_EQ(0, handler_.failed_code_);
}

}  // namespace
}  // namespace arenarpc::stream
