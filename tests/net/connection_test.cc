// net::Connection alone: a loopback socket, a Delegate written here, no protocol. What every
// protocol above relies on — bytes in order, writers that never interleave, a close that drops
// nothing it accepted, backpressure that pauses reading and resumes it, OnClosed exactly once.
#include <gtest/gtest.h>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <atomic>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "net/connection.h"
#include "net/scatter_read.h"

namespace arenarpc::net {
namespace {

using namespace std::chrono_literals;

// What the Delegate saw, shared with the test (the Delegate itself belongs to the connection).
struct Observed {
  std::mutex mutex;
  std::condition_variable changed;
  std::string input;
  int closes = 0;
  int drained = 0;
  Connection::Clock::time_point last_read_at{};

  template <class Pred>
  bool WaitFor(Pred pred, std::chrono::milliseconds limit = 10s) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, limit, pred);
  }
};

// Keeps what it reads; with `echo`, writes it straight back.
class RecordingDelegate : public Connection::Delegate {
 public:
  RecordingDelegate(std::shared_ptr<Observed> observed, bool echo)
      : observed_(std::move(observed)), echo_(echo) {}

  Connection::InputResult OnInput(Connection& connection, BufferChain& input,
                                  Connection::Clock::time_point read_at) override {
    const std::string bytes = input.ToString();
    input.clear();
    {
      std::lock_guard lock(observed_->mutex);
      observed_->input += bytes;
      observed_->last_read_at = read_at;
    }
    observed_->changed.notify_all();
    if (echo_) {
      BufferChain reply;
      reply.Append(bytes);
      connection.Write(std::move(reply));
    }
    return {};
  }
  void OnClosed(Connection& /*connection*/) override {
    {
      std::lock_guard lock(observed_->mutex);
      ++observed_->closes;
    }
    observed_->changed.notify_all();
  }
  void OnOutputDrained(Connection& /*connection*/) override {
    {
      std::lock_guard lock(observed_->mutex);
      ++observed_->drained;
    }
    observed_->changed.notify_all();
  }

 private:
  const std::shared_ptr<Observed> observed_;
  const bool echo_;
};

// Runs the test's code on each input (the bytes read so far are consumed first).
class HookDelegate : public Connection::Delegate {
 public:
  using Hook = std::function<void(Connection&, const std::string&)>;
  explicit HookDelegate(Hook hook) : hook_(std::move(hook)) {}
  Connection::InputResult OnInput(Connection& connection, BufferChain& input,
                                  Connection::Clock::time_point /*read_at*/) override {
    const std::string bytes = input.ToString();
    input.clear();
    hook_(connection, bytes);
    return {};
  }
  void OnClosed(Connection& /*connection*/) override {}

 private:
  Hook hook_;
};

// An io_context run by two threads (as a server's event loops), a listening socket, and a client
// socket of the test's own (blocking calls on a context nobody runs).
class ConnectionTest : public ::testing::Test {
 protected:
  ConnectionTest() : work_(asio::make_work_guard(io_)) {
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  }
  ~ConnectionTest() override {
    if (connection_) connection_->Close();
    connection_.reset();
    work_.reset();
    io_.stop();
    for (auto& t : threads_) t.join();
  }

  // Connects the client and wraps the accepted socket in a started Connection.
  void Open(bool echo, const Connection::Options& options = {}) {
    Open(std::make_unique<RecordingDelegate>(observed_, echo), options);
  }
  void Open(std::unique_ptr<Connection::Delegate> delegate,
            const Connection::Options& options = {}) {
    asio::ip::tcp::acceptor acceptor(io_, {asio::ip::make_address("127.0.0.1"), 0});
    client_.connect(acceptor.local_endpoint());
    asio::ip::tcp::socket accepted(io_);
    acceptor.accept(accepted);
    connection_ = Connection::Create(std::move(accepted), std::move(delegate), options);
    connection_->Start();
  }

  std::string ReadExactly(size_t n) {
    std::string out(n, '\0');
    asio::read(client_, asio::buffer(out));
    return out;
  }

  // Reads until the peer closes; returns everything read.
  std::string ReadToEof() {
    std::string out;
    char buf[64 << 10];
    asio::error_code ec;
    for (;;) {
      const size_t n = client_.read_some(asio::buffer(buf), ec);
      out.append(buf, n);
      if (ec) break;
    }
    EXPECT_EQ(asio::error::eof, ec) << ec.message();
    return out;
  }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::vector<std::thread> threads_;
  asio::io_context client_io_;
  asio::ip::tcp::socket client_{client_io_};
  std::shared_ptr<Observed> observed_ = std::make_shared<Observed>();
  std::shared_ptr<Connection> connection_;
};

TEST_F(ConnectionTest, BytesArriveInOrderAndEchoBackWhole) {
  Open(/*echo=*/true);
  std::string sent;
  for (int i = 0; i < 200; ++i) sent += "message " + std::to_string(i) + ";";
  const auto before = Connection::Clock::now();
  asio::write(client_, asio::buffer(sent));
  EXPECT_EQ(sent, ReadExactly(sent.size()));
  std::lock_guard lock(observed_->mutex);
  EXPECT_EQ(sent, observed_->input);
  // read_at is when the bytes were read: after the client wrote them, not later than now.
  EXPECT_GE(observed_->last_read_at, before);
  EXPECT_LE(observed_->last_read_at, Connection::Clock::now());
  EXPECT_EQ(sent.size(), connection_->bytes_queued());
}

TEST_F(ConnectionTest, WritesFromManyThreadsNeverInterleaveAndKeepEachThreadsOrder) {
  Open(/*echo=*/false);
  constexpr int kThreads = 4, kFrames = 300;
  constexpr size_t kFrameSize = 1000;  // "t<thread> <seq>" padded with the thread's letter
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([this, t] {
      for (int seq = 0; seq < kFrames; ++seq) {
        std::string frame = "t" + std::to_string(t) + " " + std::to_string(seq) + " ";
        frame.resize(kFrameSize, static_cast<char>('a' + t));
        BufferChain chain;
        chain.Append(frame);
        connection_->Write(std::move(chain));
      }
    });
  }
  for (auto& w : writers) w.join();
  const std::string all = ReadExactly(kThreads * kFrames * kFrameSize);
  std::vector<int> next(kThreads, 0);
  for (size_t at = 0; at < all.size(); at += kFrameSize) {
    const std::string frame = all.substr(at, kFrameSize);
    ASSERT_EQ('t', frame[0]) << "frame at " << at << " does not start a frame";
    const int t = frame[1] - '0';
    ASSERT_TRUE(t >= 0 && t < kThreads) << frame.substr(0, 16);
    const size_t space = frame.find(' ', 3);
    EXPECT_EQ(next[t], std::stoi(frame.substr(3, space - 3))) << "thread " << t << "'s order";
    ++next[t];
    // Every byte after the header is the writer's own letter: no other frame cut into it.
    EXPECT_EQ(std::string::npos, frame.find_first_not_of(static_cast<char>('a' + t), space + 1))
        << "frame of thread " << t << " interleaved";
  }
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(kFrames, next[t]);
  EXPECT_EQ(all.size(), connection_->bytes_queued());
}

TEST_F(ConnectionTest, CloseWhenFlushedSendsEverythingQueuedThenCloses) {
  Open(/*echo=*/false);
  constexpr size_t kBytes = 8u << 20;  // far more than the socket buffers take at once
  std::string payload(kBytes, 'x');
  for (size_t i = 0; i < kBytes; i += 4096) payload[i] = static_cast<char>('0' + (i / 4096) % 10);
  for (size_t at = 0; at < kBytes; at += 64 << 10) {
    BufferChain chain;
    chain.Append(std::string_view(payload).substr(at, 64 << 10));
    connection_->Write(std::move(chain));
  }
  connection_->CloseWhenFlushed();
  const std::string received = ReadToEof();  // the peer reads only now
  EXPECT_EQ(kBytes, received.size());
  EXPECT_TRUE(received == payload) << "the bytes differ";
  EXPECT_TRUE(observed_->WaitFor([&] { return observed_->closes == 1; }));
  EXPECT_EQ(CloseReason::kLocal, connection_->close_reason());
  EXPECT_EQ(kBytes, connection_->bytes_written());
}

TEST_F(ConnectionTest, OnClosedRunsOnceWhateverClosesItAndWritesAfterwardAreDropped) {
  Open(/*echo=*/false);
  std::vector<std::thread> closers;
  for (int i = 0; i < 4; ++i) closers.emplace_back([this] { connection_->Close(); });
  for (auto& c : closers) c.join();
  EXPECT_TRUE(observed_->WaitFor([&] { return observed_->closes >= 1; }));
  client_.close();  // the peer going as well is no second close
  std::this_thread::sleep_for(50ms);
  {
    std::lock_guard lock(observed_->mutex);
    EXPECT_EQ(1, observed_->closes);
  }
  EXPECT_TRUE(connection_->closed());
  EXPECT_EQ(CloseReason::kLocal, connection_->close_reason());
  uint64_t end = 0;
  BufferChain late;
  late.Append("late");
  connection_->Write(std::move(late), &end);
  EXPECT_GT(end, connection_->bytes_written());  // dropped: it will never have been written
}

TEST_F(ConnectionTest, APeerThatGoesClosesTheConnectionAsThePeers) {
  Open(/*echo=*/false);
  asio::write(client_, asio::buffer(std::string("last words")));
  client_.close();
  ASSERT_TRUE(observed_->WaitFor([&] { return observed_->closes == 1; }));
  EXPECT_EQ(CloseReason::kPeer, connection_->close_reason());
  std::lock_guard lock(observed_->mutex);
  EXPECT_EQ("last words", observed_->input);  // what arrived before the EOF was delivered
}

TEST_F(ConnectionTest, UnwrittenOutputPausesReadingUntilItDrainsToHalf) {
  std::atomic<uint64_t> pauses{0};
  Connection::Options options;
  options.max_unwritten_bytes = 1u << 20;
  options.read_pauses = &pauses;
  Open(/*echo=*/true, options);
  // The client writes 16 MiB and reads nothing: the echoes fill the socket buffers, then the
  // connection's queue, and reading must pause instead of queueing all 16 MiB.
  constexpr size_t kChunk = 64 << 10, kChunks = 256;
  const std::string chunk(kChunk, 'e');
  std::thread writer([&] {
    asio::error_code ec;
    for (size_t i = 0; i < kChunks && !ec; ++i) asio::write(client_, asio::buffer(chunk), ec);
  });
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (pauses.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_GT(pauses.load(), 0u) << "reading never paused";
  // What the connection holds stays near its bound (one read's worth over it, at most).
  std::this_thread::sleep_for(100ms);
  EXPECT_LE(connection_->unwritten_held_bytes(), options.max_unwritten_bytes + (4u << 20));
  // Reading everything back drains the queue, reading resumes, and every byte makes it.
  const std::string echoed = ReadExactly(kChunk * kChunks);
  writer.join();
  EXPECT_EQ(std::string::npos, echoed.find_first_not_of('e'));
  std::lock_guard lock(observed_->mutex);
  EXPECT_EQ(kChunk * kChunks, observed_->input.size());
}

// Messages "<K|X><8 decimal digits: body length><body>": K is kept whole, X refused from its
// 9-byte head — its bytes in the input dropped, the rest left to the connection to discard.
class SkippingDelegate : public Connection::Delegate {
 public:
  explicit SkippingDelegate(std::shared_ptr<Observed> observed) : observed_(std::move(observed)) {}
  Connection::InputResult OnInput(Connection& /*connection*/, BufferChain& input,
                                  Connection::Clock::time_point /*read_at*/) override {
    Connection::InputResult result;
    while (input.size() >= kHead) {
      char head[kHead];
      input.CopyTo(head, kHead);
      const size_t length = std::stoul(std::string(head + 1, 8));
      std::string seen;
      if (head[0] == 'X') {
        const size_t have = input.size();
        input.PopFront(std::min(have, kHead + length));
        result.skip_bytes = kHead + length - std::min(have, kHead + length);
        result.read_hint = kHead;  // the next head, not the next body
        seen = "X" + std::to_string(length) + ";";
      } else if (input.size() >= kHead + length) {
        input.PopFront(kHead);
        BufferChain body;
        input.CutFront(length, &body);
        seen = "K" + body.ToString() + ";";
      } else {
        break;
      }
      {
        std::lock_guard lock(observed_->mutex);
        observed_->input += seen;
      }
      observed_->changed.notify_all();
      if (result.skip_bytes > 0) break;  // the refused message was the input's last bytes
    }
    return result;
  }
  void OnClosed(Connection& /*connection*/) override {}
  static constexpr size_t kHead = 9;

 private:
  const std::shared_ptr<Observed> observed_;
};

std::string SkipMessage(char type, const std::string& body) {
  char length[9];
  std::snprintf(length, sizeof(length), "%08zu", body.size());
  return type + std::string(length) + body;
}

TEST_F(ConnectionTest, ARefusedMessagesRestIsDiscardedUnreadAndTheNextArrivesWhole) {
  std::atomic<uint64_t> discarded{0};
  Connection::Options options;
  options.bytes_discarded = &discarded;
  Open(std::make_unique<SkippingDelegate>(observed_), options);
  const std::string refused = SkipMessage('X', std::string(4u << 20, 'x'));
  // The head and a little of the body first: the refusal is decided on those.
  asio::write(client_, asio::buffer(refused.data(), 5000));
  ASSERT_TRUE(observed_->WaitFor([&] { return observed_->input == "X4194304;"; }))
      << observed_->input;
  // The rest arrives after the refusal: discarded, except what one armed read takes.
  asio::write(client_, asio::buffer(refused.data() + 5000, refused.size() - 5000));
  asio::write(client_, asio::buffer(SkipMessage('K', "after") + SkipMessage('X', "abc") +
                                    SkipMessage('K', "last")));
  ASSERT_TRUE(observed_->WaitFor(
      [&] { return observed_->input == "X4194304;Kafter;X3;Klast;"; }))
      << observed_->input;
  EXPECT_GE(discarded.load(), refused.size() - 5000 - (64u << 10));
  EXPECT_LE(discarded.load(), refused.size() - 5000);
}

TEST_F(ConnectionTest, MessagesRefusedFromTheirHeadsBackToBackKeepTheFraming) {
  std::atomic<uint64_t> discarded{0};
  Connection::Options options;
  options.bytes_discarded = &discarded;
  Open(std::make_unique<SkippingDelegate>(observed_), options);
  std::string bytes, expected;
  for (int i = 0; i < 40; ++i) {
    const size_t size = static_cast<size_t>(i) * 37'000 + 1;
    bytes += SkipMessage('X', std::string(size, 'x')) + SkipMessage('K', std::to_string(i));
    expected += "X" + std::to_string(size) + ";K" + std::to_string(i) + ";";
  }
  std::thread writer([&] { asio::write(client_, asio::buffer(bytes)); });
  EXPECT_TRUE(observed_->WaitFor([&] { return observed_->input == expected; }))
      << observed_->input.substr(0, 200);
  writer.join();
  EXPECT_GT(discarded.load(), 0u);
}

TEST_F(ConnectionTest, NotifyWhenDrainedCallsBackOnceTheQueueIsDownToHalf) {
  Connection::Options options;
  options.max_unwritten_bytes = 1u << 20;
  Open(/*echo=*/false, options);
  const std::string chunk(256 << 10, 'd');
  for (int i = 0; i < 32; ++i) {  // 8 MiB the client has not read yet
    BufferChain chain;
    chain.Append(chunk);
    connection_->Write(std::move(chain));
  }
  connection_->NotifyWhenDrained();
  std::this_thread::sleep_for(100ms);
  {
    std::lock_guard lock(observed_->mutex);
    EXPECT_EQ(0, observed_->drained) << "drained while the peer had read nothing";
  }
  ReadExactly(chunk.size() * 32);
  EXPECT_TRUE(observed_->WaitFor([&] { return observed_->drained == 1; }));
}

TEST_F(ConnectionTest, SilenceAfterConnectingTripsTheFirstByteTimeout) {
  Connection::Options options;
  options.first_byte_timeout_ms = 200;
  Open(/*echo=*/false, options);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(observed_->WaitFor([&] { return observed_->closes == 1; }, 5s));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 150ms);
  EXPECT_EQ(CloseReason::kFirstByteTimeout, connection_->close_reason());
}

TEST_F(ConnectionTest, WatchWritesFollowsTheBytesAndHearsTheClose) {
  Open(/*echo=*/false);
  BufferChain chain;
  chain.Append(std::string(1000, 'w'));
  uint64_t end = 0;
  connection_->Write(std::move(chain), &end);
  EXPECT_EQ(1000u, end);
  std::mutex mutex;
  std::condition_variable seen;
  uint64_t written = 0;
  bool closed = false;
  connection_->WatchWrites([&](uint64_t bytes_written, bool is_closed) {
    std::lock_guard lock(mutex);
    written = bytes_written;
    closed = is_closed;
    seen.notify_all();
    return false;  // keep watching until the close
  });
  ReadExactly(1000);
  {
    std::unique_lock lock(mutex);
    EXPECT_TRUE(seen.wait_for(lock, 5s, [&] { return written >= end; }));
  }
  connection_->Close();
  std::unique_lock lock(mutex);
  EXPECT_TRUE(seen.wait_for(lock, 5s, [&] { return closed; }));
}

TEST_F(ConnectionTest, ADelegateThatBlocksReadingGetsNothingUntilItUnblocks) {
  Open(/*echo=*/false);
  connection_->SetDelegateBlocked(true);
  // The read armed before the block still completes once; reading is not armed again after it.
  asio::write(client_, asio::buffer(std::string("first")));
  ASSERT_TRUE(observed_->WaitFor([&] { return observed_->input == "first"; }));
  std::this_thread::sleep_for(20ms);
  asio::write(client_, asio::buffer(std::string("held")));
  std::this_thread::sleep_for(100ms);
  {
    std::lock_guard lock(observed_->mutex);
    EXPECT_EQ("first", observed_->input);
  }
  connection_->SetDelegateBlocked(false);
  EXPECT_TRUE(observed_->WaitFor([&] { return observed_->input == "firstheld"; }));
}

TEST(ScatterRead, FillsTheWriteBlockThenFreshPagesAndKeepsOnlyWhatTheReadReached) {
  memory::PageAllocator& pages = IoPageAllocator();
  BufferChain chain;
  chain.Append("head");  // its write block has room after these bytes
  const uint64_t outstanding_before = pages.stats().pages_outstanding;
  const std::string data(3 * 8192 + 100, 'r');
  size_t spans = 0;
  {
    ScatterRead space(chain, 256u << 10);
    spans = space.buffers().size();
    EXPECT_EQ(ScatterRead::kMaxSpans, spans);  // 256 KiB is more than 16 pages
    size_t total = 0;
    for (const asio::mutable_buffer& span : space.buffers()) total += span.size();
    EXPECT_EQ(total, space.size());
    // As readv fills them: in order.
    size_t written = 0;
    for (const asio::mutable_buffer& span : space.buffers()) {
      const size_t n = std::min(span.size(), data.size() - written);
      std::memcpy(span.data(), data.data() + written, n);
      written += n;
    }
    space.Commit(data.size());
  }
  EXPECT_EQ("head" + data, chain.ToString());
  // The write block plus the 3 or 4 pages the bytes reached stay; the other prepared pages
  // went back.
  EXPECT_LE(pages.stats().pages_outstanding, outstanding_before + 4);
  // The page the read ended in is the write block: the next append continues its slice.
  const size_t slices = chain.span_count();
  chain.Append("tail");
  EXPECT_EQ(slices, chain.span_count());
  EXPECT_EQ("head" + data + "tail", chain.ToString());

  // A short limit: fewer spans; a read that returned nothing changes nothing.
  {
    ScatterRead space(chain, 100);
    EXPECT_EQ(1u, space.buffers().size());
    EXPECT_EQ(100u, space.size());
    EXPECT_THROW(space.Commit(101), std::logic_error);
    space.Commit(0);
  }
  EXPECT_EQ("head" + data + "tail", chain.ToString());
}

TEST_F(ConnectionTest, AFrameLargerThanManyPagesArrivesWhole) {
  // Reads past the first page are scatter reads of many pages at once.
  Open(/*echo=*/true);
  std::string sent(1u << 20, '\0');
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<char>('a' + i * 13 % 26);
  std::thread writer([&] { asio::write(client_, asio::buffer(sent)); });
  EXPECT_EQ(sent, ReadExactly(sent.size()));
  writer.join();
  std::lock_guard lock(observed_->mutex);
  EXPECT_EQ(sent, observed_->input);
}

TEST_F(ConnectionTest, RepliesWrittenDuringOneInputTurnLeaveTogetherWhenItEnds) {
  // Each input is answered with 20 small frames from inside OnInput (as a server answers the
  // requests of one read, refusals included): none is written while the turn runs, and all of
  // them go out, in order, as soon as it ends.
  std::vector<uint64_t> written_in_turn;
  std::mutex mutex;
  Open(std::make_unique<HookDelegate>([&](Connection& connection, const std::string& bytes) {
    const uint64_t before = connection.bytes_written();
    for (int i = 0; i < 20; ++i) {
      BufferChain reply;
      reply.Append(bytes + std::to_string(i) + ";");
      connection.Write(std::move(reply));
    }
    std::lock_guard lock(mutex);
    written_in_turn.push_back(connection.bytes_written() - before);
  }));
  asio::write(client_, asio::buffer(std::string("a")));
  std::string expected;
  for (int i = 0; i < 20; ++i) expected += "a" + std::to_string(i) + ";";
  EXPECT_EQ(expected, ReadExactly(expected.size()));
  std::lock_guard lock(mutex);
  ASSERT_EQ(1u, written_in_turn.size());
  EXPECT_EQ(0u, written_in_turn[0]);
}

TEST_F(ConnectionTest, AWriteFromAnotherThreadDuringAnInputTurnGoesOutAtOnce) {
  // Shared with the hook, which the connection (and its io thread) may run past the test's end.
  auto entered = std::make_shared<std::promise<void>>();
  std::future<void> turn_entered = entered->get_future();
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  Open(std::make_unique<HookDelegate>(
      [entered, released](Connection& connection, const std::string& bytes) {
        BufferChain reply;
        reply.Append("turn:" + bytes);
        connection.Write(std::move(reply));
        entered->set_value();
        released.wait();  // the turn lasts until the test has read the other thread's reply
      }));
  asio::write(client_, asio::buffer(std::string("x")));
  turn_entered.wait();
  // A handler's reply on another thread: not held back by the turn. It also takes the turn's
  // queued reply along (the queue is one, in order).
  BufferChain other;
  other.Append("other");
  connection_->Write(std::move(other));
  EXPECT_EQ("turn:xother", ReadExactly(std::string("turn:xother").size()));
  release.set_value();
}

TEST_F(ConnectionTest, CloseWhenFlushedInsideAnInputTurnSendsTheTurnsWritesFirst) {
  Open(std::make_unique<HookDelegate>([](Connection& connection, const std::string& bytes) {
    BufferChain reply;
    reply.Append("bye " + bytes);
    connection.Write(std::move(reply));
    connection.CloseWhenFlushed();
  }));
  asio::write(client_, asio::buffer(std::string("now")));
  EXPECT_EQ("bye now", ReadToEof());
}

}  // namespace
}  // namespace arenarpc::net
