// ServerCall alone, driven against a fake ReplySink: no protocol, no ServerConnection. Every way a
// call can end — a reply, a failed handler, canceled or past its deadline before it started, bytes
// that do not parse, a request over max_request_memory, past max_fibers, abandoned — answers the
// sink exactly once (or, abandoned, never) and settles its admission exactly once: the server's
// in-flight count is back at zero and never went below it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "arenarpc/error_codes.h"
#include "arenarpc/memory/message_memory.h"
#include "call/controller_access.h"
#include "echo/echo.pb.h"
#include "echo_server_state.h"
#include "memory/request_memory_gate.h"
#include "net/connection.h"
#include "server/admission_ticket.h"
#include "server/reply_sink.h"
#include "server/server_call.h"
#include "server/server_state.h"

namespace arenarpc::server {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// What the sink was asked to do, in order.
struct SinkRecord {
  enum class Kind { kReply, kError } kind;
  int64_t key = 0;
  int code = 0;
  std::string text;  // the error's text, or the reply's bytes
  ErrorCause cause = ErrorCause::kError;
  uint64_t calls_counted = 0;  // the method's calls counted as the reply went out
};

class FakeSink final : public ReplySink {
 public:
  std::string_view name() const noexcept override { return "fake"; }
  void Reply(net::Connection& /*connection*/, ServerCall& call,
             const google::protobuf::Message& response) override {
    net::BufferChain reply;
    const bool ok = !call.controller().Failed();
    reply.Append(ok ? response.SerializeAsString()
                    : "failed:" + std::to_string(call.controller().ErrorCode()));
    call.OnReplyPacked(ok, reply);
    std::lock_guard lock(mutex_);
    records_.push_back({SinkRecord::Kind::kReply, call.correlation_id(), 0, reply.ToString(),
                        ErrorCause::kError, call.method().calls.load()});
  }
  void SendError(net::Connection& /*connection*/, int64_t key, const CallError& error) override {
    std::lock_guard lock(mutex_);
    records_.push_back(
        {SinkRecord::Kind::kError, key, error.code, std::string(error.text), error.cause});
  }
  bool CallCanceled(int64_t /*key*/) override { return canceled.load(); }

  std::vector<SinkRecord> records() {
    std::lock_guard lock(mutex_);
    return records_;
  }

  std::atomic<bool> canceled{false};

 private:
  std::mutex mutex_;
  std::vector<SinkRecord> records_;
};

// Reads nothing of interest: the calls under test never read their connection.
class IdleDelegate final : public net::Connection::Delegate {
 public:
  net::Connection::InputResult OnInput(net::Connection& /*connection*/, net::BufferChain& input,
                                       net::Connection::Clock::time_point /*read_at*/) override {
    input.clear();
    return {};
  }
  void OnClosed(net::Connection& /*connection*/) override {}
};

class ServerCallTest : public ::testing::Test {
 protected:
  ServerCallTest()
      : connection_(net::Connection::Create(std::move(sockets_.accepted),
                                            std::make_unique<IdleDelegate>(),
                                            net::Connection::Options{})) {
    connection_->Start();
  }
  ~ServerCallTest() override { connection_->Close(); }

  void TearDown() override {
    // Every path settled its admission exactly once: none left in flight or queued (a second
    // settlement would have taken the count below zero).
    EXPECT_EQ(0, state_->admission.in_flight());
    EXPECT_EQ(0, state_->admission.queued());
  }

  // An admitted call waiting in the backlog for a thread, as ServerConnection leaves it.
  std::unique_ptr<ServerCall> Admitted(int64_t key, int32_t timeout_ms = -1,
                                       Clock::time_point read_at = Clock::now()) {
    Admission::Verdict verdict;
    AdmissionTicket ticket =
        AdmissionTicket::Admit(state_->admission, std::chrono::milliseconds(0), &verdict);
    EXPECT_EQ(Admission::Verdict::kAdmitted, verdict);
    auto call = std::make_unique<ServerCall>(state_, std::move(ticket), connection_, &cancels_,
                                             fiber_share_, &sink_, method_, key, read_at);
    if (timeout_ms >= 0) {
      internal::ControllerAccess::set_deadline_hint_ms(call->controller(), timeout_ms);
    }
    call->WaitsForThread();
    EXPECT_EQ(1, state_->admission.in_flight());
    EXPECT_EQ(1, state_->admission.queued());
    return call;
  }

  static RequestPayload Payload(std::string bytes) {
    RequestPayload payload;
    payload.request_size = bytes.size();
    payload.bytes.Append(bytes);
    return payload;
  }

  static std::string EchoRequestBytes(const std::string& message) {
    example::EchoRequest request;
    request.add_message(message);
    return request.SerializeAsString();
  }

  // The one record the sink got, once it got it (a handler's reply may come from its fiber).
  SinkRecord OnlyRecord() {
    WaitUntil([&] { return !sink_.records().empty(); });
    std::vector<SinkRecord> records = sink_.records();
    EXPECT_EQ(1u, records.size());
    return records.empty() ? SinkRecord{SinkRecord::Kind::kError, -1, 0, {}, ErrorCause::kError}
                           : records.front();
  }

  EchoHandler handler_;
  EchoServerState served_{&handler_, OneThread()};
  std::shared_ptr<ServerState>& state_ = served_.state;
  MethodEntry*& method_ = served_.method;
  LoopbackPair sockets_;
  FakeSink sink_;
  CancelRegistry cancels_;
  std::shared_ptr<FiberShares::Connection> fiber_share_ =
      std::make_shared<FiberShares::Connection>();
  std::shared_ptr<net::Connection> connection_;

  static ServerOptions OneThread() {
    ServerOptions options;
    options.num_threads = 1;
    return options;
  }
};

TEST_F(ServerCallTest, AReplyIsPackedAndSentOnceAndSettlesItsAdmission) {
  ServerCall::Start(Admitted(7), Payload(EchoRequestBytes("hello")));
  const SinkRecord record = OnlyRecord();
  EXPECT_EQ(SinkRecord::Kind::kReply, record.kind);
  EXPECT_EQ(7, record.key);
  example::EchoResponse response;
  ASSERT_TRUE(response.ParseFromString(record.text));
  ASSERT_EQ(1, response.message_size());
  EXPECT_EQ("hello", response.message(0));
  EXPECT_EQ(1, handler_.runs.load());
  EXPECT_EQ(1u, method_->calls.load());
  EXPECT_EQ(1u, record.calls_counted);  // counted before the reply left: a client sees it counted
}

TEST_F(ServerCallTest, AFailedHandlerIsPackedAsItsErrorOnce) {
  handler_.fail_code = EINTERNAL + 100;
  ServerCall::Start(Admitted(8), Payload(EchoRequestBytes("x")));
  const SinkRecord record = OnlyRecord();
  EXPECT_EQ(SinkRecord::Kind::kReply, record.kind);  // packed by the sink, as the protocol does
  EXPECT_EQ("failed:" + std::to_string(EINTERNAL + 100), record.text);
  EXPECT_EQ(1, handler_.runs.load());
}

TEST_F(ServerCallTest, ACallItsClientCanceledWhileQueuedIsAnsweredWithoutItsHandler) {
  sink_.canceled = true;
  ServerCall::Start(Admitted(9), Payload(EchoRequestBytes("x")));
  const SinkRecord record = OnlyRecord();
  EXPECT_EQ(SinkRecord::Kind::kError, record.kind);
  EXPECT_EQ(ECANCELED, record.code);
  EXPECT_EQ(0, handler_.runs.load());
  EXPECT_EQ(1u, state_->counters.canceled_before_start.load());
}

TEST_F(ServerCallTest, ACallWhoseConnectionClosedWhileQueuedDoesNotRun) {
  std::unique_ptr<ServerCall> call = Admitted(10);
  connection_->Close();
  ASSERT_TRUE(WaitUntil([&] { return connection_->closed(); }));
  ServerCall::Start(std::move(call), Payload(EchoRequestBytes("x")));
  EXPECT_EQ(ECANCELED, OnlyRecord().code);
  EXPECT_EQ(0, handler_.runs.load());
}

TEST_F(ServerCallTest, ACallPastItsDeadlineWhenAThreadTakesItIsAnsweredTimedOut) {
  std::unique_ptr<ServerCall> call = Admitted(11, /*timeout_ms=*/5, Clock::now() - 50ms);
  ServerCall::Start(std::move(call), Payload(EchoRequestBytes("x")));
  const SinkRecord record = OnlyRecord();
  EXPECT_EQ(ERPCTIMEDOUT, record.code);
  EXPECT_NE(std::string::npos, record.text.find("past its timeout_ms=5")) << record.text;
  EXPECT_EQ(0, handler_.runs.load());
  EXPECT_EQ(1u, state_->counters.rejected_timed_out.load());
}

TEST_F(ServerCallTest, BytesThatDoNotParseAreAnsweredWithTheRequestError) {
  ServerCall::Start(Admitted(12), Payload(std::string("\xff\xff\xff\xff", 4)));
  const SinkRecord record = OnlyRecord();
  EXPECT_EQ(SinkRecord::Kind::kError, record.kind);
  EXPECT_EQ(EREQUEST, record.code);
  EXPECT_EQ(ErrorCause::kError, record.cause);
  EXPECT_EQ(0, handler_.runs.load());
}

TEST_F(ServerCallTest, ARequestOverMaxRequestMemoryIsAnsweredAsTooLarge) {
  method_->request_memory = std::make_unique<memory::RequestMemoryGate>(
      *example::EchoRequest::descriptor(), /*max_request_memory=*/64);
  ServerCall::Start(Admitted(13), Payload(EchoRequestBytes(std::string(4096, 'x'))));
  const SinkRecord record = OnlyRecord();
  EXPECT_EQ(EREQUEST, record.code);
  EXPECT_EQ(ErrorCause::kRequestTooLarge, record.cause);
  EXPECT_EQ(0, handler_.runs.load());
}

TEST_F(ServerCallTest, ACallPastItsConnectionsFiberShareIsAnsweredOverShare) {
  // One fiber per connection, held: the call is past its connection's share.
  state_->config.options.max_fibers_per_connection = 1;
  state_->runtime = std::make_unique<ServerRuntime>(state_->config.options);
  std::string refusal;
  FiberShares::Ticket held =
      state_->runtime->fiber_shares().TryTake(fiber_share_, false, &refusal);
  ASSERT_TRUE(held) << refusal;
  ServerCall::Start(Admitted(14), Payload(EchoRequestBytes("x")));
  const SinkRecord record = OnlyRecord();
  EXPECT_EQ(ELIMIT, record.code);
  EXPECT_EQ(ErrorCause::kOverShare, record.cause);
  EXPECT_EQ(0, handler_.runs.load());
}

TEST_F(ServerCallTest, AnAbandonedCallAnswersNothingAndSettlesItsAdmission) {
  std::unique_ptr<ServerCall> call = Admitted(15);
  const RequestPayload payload = Payload(EchoRequestBytes("x"));
  ServerCall::Abandon(std::move(call), payload);
  EXPECT_TRUE(sink_.records().empty());
  EXPECT_EQ(0, handler_.runs.load());
  EXPECT_EQ(1u, state_->counters.canceled_before_start.load());
}

}  // namespace
}  // namespace arenarpc::server
