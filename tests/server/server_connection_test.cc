// ServerConnection alone, with a protocol written here: requests are text lines, replies and
// errors are text lines. No wire protocol of the server's, no Server. What the connection owns —
// admission and its refusals, the backlog, handing decoded calls and tasks on, a connection closed
// with calls not started — answers every request exactly once, leaves admission with nothing in
// flight and releases what each decoded request held exactly once.
#include <gtest/gtest.h>

#include <asio/read_until.hpp>
#include <asio/streambuf.hpp>
#include <asio/write.hpp>
#include <istream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "arenarpc/authenticator.h"
#include "arenarpc/error_codes.h"
#include "arenarpc/memory/page_allocator.h"
#include "echo_server_state.h"
#include "net/connection.h"
#include "server/call_task.h"
#include "server/server_call.h"
#include "server/server_connection.h"
#include "server/server_protocol_table.h"

namespace arenarpc::server {
namespace {

// Counts the pages a decoded request's bytes take and give back: every request's resources go
// back exactly once, whether its call ran, was refused or was dropped.
class CountingPages final : public memory::PageAllocator {
 public:
  size_t page_size() const noexcept override { return 4096; }
  void* Allocate() override {
    allocated.fetch_add(1);
    return ::operator new(page_size());
  }
  void Deallocate(void* page) noexcept override {
    released.fetch_add(1);
    ::operator delete(page);
  }
  memory::PageAllocatorStats stats() const noexcept override { return {}; }

  std::atomic<int> allocated{0}, released{0};
};

CountingPages& RequestPages() {
  static CountingPages pages;
  return pages;
}

// A page (Step::kTask) that answers "page <key>"; counts its destructions.
class LinePageTask final : public AdmittedTask {
 public:
  static inline std::atomic<int> destroyed{0};
  LinePageTask(std::shared_ptr<ServerState> state, std::shared_ptr<net::Connection> connection,
               int64_t key)
      : AdmittedTask(std::move(state)), connection_(std::move(connection)), key_(key) {}
  ~LinePageTask() override { destroyed.fetch_add(1); }

 protected:
  void Run() override {
    net::BufferChain bytes;
    bytes.Append("page " + std::to_string(key_) + "\n");
    connection_->Write(std::move(bytes));
  }

 private:
  std::shared_ptr<net::Connection> connection_;
  int64_t key_;
};

// "<kind> <key> <message>\n": kind Echo calls arenarpc.example.EchoService.Echo with
// EchoRequest{message} (its bytes and an attachment of `message` in RequestPages()); Invalid is
// such a call marked invalid (EREQUEST); Page is a task; any other kind calls a method of that
// name. The message is also the call's credential (ServerOptions::auth). Answered
// "reply <key> <message>\n", "page <key>\n" or "error <key> <code>\n".
class LineProtocol final : public ServerProtocol {
 public:
  static std::unique_ptr<ServerProtocol> Create(ServerState& state, ProtocolOwner& /*owner*/,
                                                bool /*internal_port*/) {
    return std::make_unique<LineProtocol>(state.shared_from_this());
  }
  explicit LineProtocol(std::shared_ptr<ServerState> state) : state_(std::move(state)) {}

  std::string_view name() const noexcept override { return "line"; }
  Step Next(net::Connection& connection, net::BufferChain& input,
            std::chrono::steady_clock::time_point /*read_at*/, Decoded* decoded) override {
    const std::string text = input.ToString();
    const size_t end = text.find('\n');
    if (end == std::string::npos) return Step::kNeedMore;
    input.PopFront(end + 1);
    std::istringstream line(text.substr(0, end));
    kind_.clear();
    message_.clear();
    int64_t key = 0;
    line >> kind_ >> key >> message_;
    if (kind_.empty()) {
      error_ = "an empty line";
      return Step::kMalformed;
    }
    if (kind_ == "Page") {
      decoded->task.key = key;
      decoded->task.task =
          std::make_unique<LinePageTask>(state_, connection.shared_from_this(), key);
      return Step::kTask;
    }
    DecodedCall& call = decoded->call;
    call.head.service_name = "arenarpc.example.EchoService";
    call.head.method_name = kind_ == "Invalid" ? std::string_view("Echo") : kind_;
    call.head.key = key;
    call.head.per_request_auth = true;
    call.head.credential = message_;
    if (kind_ == "Invalid") {
      call.head.invalid_code = EREQUEST;
      call.head.invalid_text = "marked invalid";
    }
    example::EchoRequest request;
    request.add_message(message_);
    const std::string bytes = request.SerializeAsString();
    call.payload.bytes = net::BufferChain(&RequestPages());
    call.payload.bytes.Append(bytes);
    call.payload.request_size = bytes.size();
    call.fields.attachment = net::BufferChain(&RequestPages());
    call.fields.attachment.Append(message_);
    call.fields.user_fields.emplace_back("kind", kind_);
    return Step::kCall;
  }
  const std::string& error() const noexcept override { return error_; }

  void Reply(net::Connection& connection, ServerCall& call,
             const google::protobuf::Message& response) override {
    net::BufferChain reply;
    const bool ok = Pack(call, response, &reply);
    call.OnReplyPacked(ok, reply);
    connection.Write(std::move(reply));
  }
  static bool Pack(ServerCall& call, const google::protobuf::Message& response,
                   net::BufferChain* out) {
    const auto& echo = static_cast<const example::EchoResponse&>(response);
    if (call.controller().Failed()) {
      out->Append("error " + std::to_string(call.correlation_id()) + " " +
                  std::to_string(call.controller().ErrorCode()) + "\n");
      return false;
    }
    // What the decoded call set in the controller comes back in the reply.
    Controller& controller = call.controller();
    const auto kind = controller.request_user_fields().find("kind");
    out->Append("reply " + std::to_string(call.correlation_id()) + " " +
                (echo.message_size() > 0 ? echo.message(0) : std::string()) + " " +
                (kind != controller.request_user_fields().end() ? kind->second : "-") + " " +
                controller.request_attachment().ToString() + "\n");
    return true;
  }
  void SendError(net::Connection& connection, int64_t key, const CallError& error) override {
    net::BufferChain bytes;
    bytes.Append("error " + std::to_string(key) + " " + std::to_string(error.code) + "\n");
    connection.Write(std::move(bytes));
  }

 private:
  const std::shared_ptr<ServerState> state_;
  std::string kind_, message_, error_;  // the last request's: its CallHead points into them
};

// Accepts the credential "good".
class GoodCredential final : public Authenticator {
 public:
  int GenerateCredential(std::string* auth_str) const override {
    *auth_str = "good";
    return 0;
  }
  int VerifyCredential(const std::string& auth_str, std::string_view /*client_addr*/,
                       AuthContext* /*out_ctx*/) const override {
    return auth_str == "good" ? 0 : -1;
  }
};

const ServerProtocolEntry kLineProtocol{"line", protocol::WireProtocol::kBaiduStd,
                                        &LineProtocol::Create};

class ServerConnectionTest : public ::testing::Test {
 protected:
  // One thread runs the handlers: the I/O thread itself, or with `worker_threads` one of its
  // own (the connection keeps reading while a handler waits).
  void Open(ServerOptions options = {}) {
    options.num_threads = 1;
    served_ = std::make_unique<EchoServerState>(&handler_, options);
    state_ = served_->state;
    pages_allocated_ = RequestPages().allocated.load();
    pages_released_ = RequestPages().released.load();
    pages_destroyed_ = LinePageTask::destroyed.load();
    connection_ = net::Connection::Create(
        std::move(sockets_.accepted),
        std::make_unique<ServerConnection>(state_.get(), state_->runtime->handler_threads(),
                                           /*internal_port=*/false, &kLineProtocol),
        net::Connection::Options{});
    connection_->Start();
  }
  ~ServerConnectionTest() override {
    handler_.Release();
    if (!connection_) return;
    connection_->Close();
    // A drainer on a worker thread may still hold the connection: it must let go before the
    // loopback pair's io_context, which owns the connection's timers, goes.
    WaitUntil([&] { return connection_.use_count() == 1; });
  }

  void Send(const std::string& lines) { asio::write(sockets_.client, asio::buffer(lines)); }

  // The next answer line, "reply <key> <message> <kind> <attachment>", "page <key>" or
  // "error <key> <code>".
  std::string Answer() {
    asio::read_until(sockets_.client, answers_, '\n');
    std::istream in(&answers_);
    std::string line;
    std::getline(in, line);
    return line;
  }

  // Nothing admitted is left in flight (a doubled settlement would take it below zero).
  void ExpectAdmissionSettled() {
    WaitUntil([&] { return state_->admission.in_flight() == 0; });
    EXPECT_EQ(0, state_->admission.in_flight());
    EXPECT_EQ(0, state_->admission.queued());
  }

  // `calls` decoded calls took their request's pages (payload and attachment: two each) and
  // every page went back once; `tasks` decoded tasks were destroyed once each.
  void ExpectDecodedReleased(int calls, int tasks = 0) {
    CountingPages& pages = RequestPages();
    WaitUntil([&] { return pages.released.load() - pages_released_ >= 2 * calls; });
    EXPECT_EQ(2 * calls, pages.allocated.load() - pages_allocated_);
    EXPECT_EQ(2 * calls, pages.released.load() - pages_released_);
    WaitUntil([&] { return LinePageTask::destroyed.load() - pages_destroyed_ >= tasks; });
    EXPECT_EQ(tasks, LinePageTask::destroyed.load() - pages_destroyed_);
  }

  EchoHandler handler_;
  std::unique_ptr<EchoServerState> served_;
  std::shared_ptr<ServerState> state_;
  // After the state: its thread stops (and what it still holds of the connection goes) before
  // the state does, as Server::Join() closes every connection before the state can go.
  LoopbackPair sockets_;
  std::shared_ptr<net::Connection> connection_;
  asio::streambuf answers_;
  int pages_allocated_ = 0, pages_released_ = 0, pages_destroyed_ = 0;
};

TEST_F(ServerConnectionTest, EveryCallIsAnsweredOnceInOrderOfItsRequests) {
  Open();
  Send("Echo 1 a\nEcho 2 b\nEcho 3 c\n");
  // The decoded call's fields reached the handler's Controller: user field and attachment.
  EXPECT_EQ("reply 1 a Echo a", Answer());
  EXPECT_EQ("reply 2 b Echo b", Answer());
  EXPECT_EQ("reply 3 c Echo c", Answer());
  EXPECT_EQ(3, handler_.runs.load());
  ExpectAdmissionSettled();
  EXPECT_EQ(3u, state_->counters.requests.load());
  ExpectDecodedReleased(3);
}

TEST_F(ServerConnectionTest, AnUnknownMethodIsRefusedWithoutAdmittingIt) {
  Open();
  Send("Nope 4 x\nEcho 5 y\n");
  EXPECT_EQ("error 4 " + std::to_string(ENOMETHOD), Answer());
  EXPECT_EQ("reply 5 y Echo y", Answer());
  EXPECT_EQ(1u, state_->counters.rejected_unknown.load());
  ExpectAdmissionSettled();
  ExpectDecodedReleased(2);
}

TEST_F(ServerConnectionTest, CallsPastMaxConcurrencyAreRefusedAtOnce) {
  ServerOptions options;
  options.max_concurrency = 1;
  options.worker_threads = 1;
  Open(options);
  handler_.Hold();
  Send("Echo 6 held\n");
  handler_.WaitRunning(1);
  Send("Echo 7 over\n");  // decoded while the first waits in its handler
  EXPECT_EQ("error 7 " + std::to_string(ELIMIT), Answer());
  // The refused call's request went back while the first still runs.
  EXPECT_TRUE(WaitUntil([&] { return RequestPages().released.load() - pages_released_ == 2; }));
  handler_.Release();
  EXPECT_EQ("reply 6 held Echo held", Answer());
  EXPECT_EQ(1, handler_.runs.load());
  ExpectAdmissionSettled();
  EXPECT_EQ(1u, state_->counters.rejected_limit.load());
  ExpectDecodedReleased(2);
}

TEST_F(ServerConnectionTest, CallsPastMaxQueuedRequestsAreRefusedAtOnce) {
  ServerOptions options;
  options.max_queued_requests = 1;
  options.worker_threads = 1;
  Open(options);
  handler_.Hold();
  Send("Echo 30 held\n");
  handler_.WaitRunning(1);
  Send("Echo 31 queued\nEcho 32 over\n");  // 31 waits for the only thread; 32 finds no room
  EXPECT_EQ("error 32 " + std::to_string(ELIMIT), Answer());
  handler_.Release();
  EXPECT_EQ("reply 30 held Echo held", Answer());
  EXPECT_EQ("reply 31 queued Echo queued", Answer());
  EXPECT_EQ(2, handler_.runs.load());
  ExpectAdmissionSettled();
  EXPECT_EQ(1u, state_->counters.rejected_limit.load());
  ExpectDecodedReleased(3);
}

TEST_F(ServerConnectionTest, AStoppingServerRefusesNewCallsWithELOGOFF) {
  Open();
  Send("Echo 8 before\n");
  EXPECT_EQ("reply 8 before Echo before", Answer());
  ASSERT_TRUE(state_->admission.StartStopping());
  Send("Echo 9 after\nPage 33 x\n");
  EXPECT_EQ("error 9 " + std::to_string(ELOGOFF), Answer());
  EXPECT_EQ("error 33 " + std::to_string(ELOGOFF), Answer());
  EXPECT_EQ(1, handler_.runs.load());
  EXPECT_EQ(2u, state_->counters.rejected_stopping.load());
  ExpectAdmissionSettled();
  ExpectDecodedReleased(2, /*tasks=*/1);
}

TEST_F(ServerConnectionTest, AnInvalidRequestIsAnsweredWithItsCodeOnceAdmitted) {
  Open();
  Send("Invalid 34 x\nEcho 35 y\n");
  EXPECT_EQ("error 34 " + std::to_string(EREQUEST), Answer());
  EXPECT_EQ("reply 35 y Echo y", Answer());
  EXPECT_EQ(1, handler_.runs.load());
  EXPECT_EQ(2u, state_->counters.requests.load());
  ExpectAdmissionSettled();
  ExpectDecodedReleased(2);
}

TEST_F(ServerConnectionTest, ACallWithoutAGoodCredentialIsRefusedWithERPCAUTH) {
  GoodCredential auth;
  ServerOptions options;
  options.auth = &auth;
  Open(options);
  Send("Echo 36 bad\nEcho 37 good\n");
  EXPECT_EQ("error 36 " + std::to_string(ERPCAUTH), Answer());
  EXPECT_EQ("reply 37 good Echo good", Answer());
  EXPECT_EQ(1, handler_.runs.load());
  EXPECT_EQ(1u, state_->counters.rejected_auth.load());
  ExpectAdmissionSettled();
  ExpectDecodedReleased(2);
}

TEST_F(ServerConnectionTest, AnOvercrowdedConnectionRefusesCallsAndPagesWithEOVERCROWDED) {
  ServerOptions options;
  options.max_unwritten_bytes = 0;  // whatever the connection holds is too much
  Open(options);
  Send("Echo 38 x\nPage 39 x\n");
  EXPECT_EQ("error 38 " + std::to_string(EOVERCROWDED), Answer());
  EXPECT_EQ("error 39 " + std::to_string(EOVERCROWDED), Answer());
  EXPECT_EQ(0, handler_.runs.load());
  EXPECT_EQ(2u, state_->counters.rejected_overcrowded.load());
  ExpectAdmissionSettled();
  ExpectDecodedReleased(1, /*tasks=*/1);
}

TEST_F(ServerConnectionTest, AnAdmittedTaskRunsOnceAndIsReleasedOnce) {
  ServerOptions options;
  options.max_concurrency = 1;
  options.worker_threads = 1;
  Open(options);
  Send("Page 40 x\n");
  EXPECT_EQ("page 40", Answer());
  // The page's answer can reach us before its ticket settles: with max_concurrency=1 the next
  // call would then be refused.
  ExpectAdmissionSettled();
  handler_.Hold();
  Send("Echo 41 held\n");
  handler_.WaitRunning(1);
  Send("Page 42 over\n");  // past max_concurrency, as a call would be
  EXPECT_EQ("error 42 " + std::to_string(ELIMIT), Answer());
  handler_.Release();
  EXPECT_EQ("reply 41 held Echo held", Answer());
  ExpectAdmissionSettled();
  ExpectDecodedReleased(1, /*tasks=*/2);
}

TEST_F(ServerConnectionTest, CallsLeftInTheBacklogWhenTheConnectionClosesAreDropped) {
  ServerOptions options;
  options.worker_threads = 1;
  Open(options);
  handler_.Hold();
  // The first call holds the only worker; the other two wait in the connection's backlog.
  Send("Echo 10 a\nEcho 11 b\nEcho 12 c\n");
  handler_.WaitRunning(1);
  WaitUntil([&] { return state_->admission.in_flight() >= 3; });
  EXPECT_EQ(3, state_->admission.in_flight());
  sockets_.client.close();  // the client goes away
  ASSERT_TRUE(WaitUntil([&] { return connection_->closed(); }));
  handler_.Release();
  ExpectAdmissionSettled();
  EXPECT_EQ(1, handler_.runs.load());  // the two queued ones never ran
  EXPECT_EQ(2u, state_->counters.canceled_before_start.load());
  ExpectDecodedReleased(3);
}

TEST_F(ServerConnectionTest, AMalformedRequestClosesTheConnectionAfterTheCallsBeforeIt) {
  Open();
  Send("Echo 13 a\n\n");
  EXPECT_EQ("reply 13 a Echo a", Answer());
  asio::error_code error;
  char byte;
  sockets_.client.read_some(asio::buffer(&byte, 1), error);
  EXPECT_EQ(asio::error::eof, error) << error.message();
  EXPECT_EQ(1u, state_->counters.malformed_frames.load());
  ExpectAdmissionSettled();
  ExpectDecodedReleased(1);
}

}  // namespace
}  // namespace arenarpc::server
