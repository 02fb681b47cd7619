// ServerConnection alone, with a protocol written here: requests are text lines, replies and
// errors are text lines. No wire protocol of the server's, no Server. What the connection owns —
// admission and its refusals, the backlog, handing calls to ServerCall, a connection closed with
// calls not started — answers every request exactly once and leaves admission with nothing in
// flight.
#include <gtest/gtest.h>

#include <asio/read_until.hpp>
#include <asio/streambuf.hpp>
#include <asio/write.hpp>
#include <istream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "arenarpc/error_codes.h"
#include "echo_server_state.h"
#include "net/connection.h"
#include "server/server_call.h"
#include "server/server_connection.h"
#include "server/server_protocol_table.h"

namespace arenarpc::server {
namespace {

// "<method> <key> <message>\n" calls arenarpc.example.EchoService.<method> with EchoRequest{message};
// answered "reply <key> <message>\n" or "error <key> <code>\n".
class LineProtocol final : public ServerProtocol {
 public:
  static std::unique_ptr<ServerProtocol> Create(ServerState& /*state*/, ProtocolOwner& /*owner*/,
                                                bool /*internal_port*/) {
    return std::make_unique<LineProtocol>();
  }

  std::string_view name() const noexcept override { return "line"; }
  Step Next(net::Connection& /*connection*/, net::BufferChain& input,
            std::chrono::steady_clock::time_point /*read_at*/, CallHead* head) override {
    const std::string text = input.ToString();
    const size_t end = text.find('\n');
    if (end == std::string::npos) return Step::kNeedMore;
    input.PopFront(end + 1);
    std::istringstream line(text.substr(0, end));
    method_.clear();
    message_.clear();
    line >> method_ >> key_ >> message_;
    if (method_.empty()) {
      error_ = "an empty line";
      return Step::kMalformed;
    }
    head->service_name = "arenarpc.example.EchoService";
    head->method_name = method_;
    head->key = key_;
    return Step::kCall;
  }
  void Admitted(net::Connection& /*connection*/, ServerCall& /*call*/,
                RequestPayload* payload) override {
    example::EchoRequest request;
    request.add_message(message_);
    const std::string bytes = request.SerializeAsString();
    payload->request_size = bytes.size();
    payload->bytes.Append(bytes);
  }
  void Rejected() override {}
  const std::string& error() const noexcept override { return error_; }

  bool PackReply(ServerCall& call, const google::protobuf::Message& response,
                 net::BufferChain* out) override {
    const auto& echo = static_cast<const example::EchoResponse&>(response);
    if (call.controller().Failed()) {
      out->Append("error " + std::to_string(call.correlation_id()) + " " +
                  std::to_string(call.controller().ErrorCode()) + "\n");
      return false;
    }
    out->Append("reply " + std::to_string(call.correlation_id()) + " " +
                (echo.message_size() > 0 ? echo.message(0) : std::string()) + "\n");
    return true;
  }
  void SendReply(net::Connection& connection, int64_t /*key*/,
                 net::BufferChain&& reply) override {
    connection.Write(std::move(reply));
  }
  void SendError(net::Connection& connection, int64_t key, const CallError& error) override {
    net::BufferChain bytes;
    bytes.Append("error " + std::to_string(key) + " " + std::to_string(error.code) + "\n");
    connection.Write(std::move(bytes));
  }

 private:
  std::string method_, message_, error_;
  int64_t key_ = 0;
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
    connection_ = net::Connection::Create(
        std::move(sockets_.accepted),
        std::make_unique<ServerConnection>(state_.get(), state_->runtime->handler_threads(),
                                           /*internal_port=*/false, &kLineProtocol),
        net::Connection::Options{});
    connection_->Start();
  }
  ~ServerConnectionTest() override {
    handler_.Release();
    if (connection_) connection_->Close();
  }

  void Send(const std::string& lines) { asio::write(sockets_.client, asio::buffer(lines)); }

  // The next answer line, "reply <key> <message>" or "error <key> <code>".
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

  EchoHandler handler_;
  std::unique_ptr<EchoServerState> served_;
  std::shared_ptr<ServerState> state_;
  // After the state: its thread stops (and what it still holds of the connection goes) before
  // the state does, as Server::Join() closes every connection before the state can go.
  LoopbackPair sockets_;
  std::shared_ptr<net::Connection> connection_;
  asio::streambuf answers_;
};

TEST_F(ServerConnectionTest, EveryCallIsAnsweredOnceInOrderOfItsRequests) {
  Open();
  Send("Echo 1 a\nEcho 2 b\nEcho 3 c\n");
  EXPECT_EQ("reply 1 a", Answer());
  EXPECT_EQ("reply 2 b", Answer());
  EXPECT_EQ("reply 3 c", Answer());
  EXPECT_EQ(3, handler_.runs.load());
  ExpectAdmissionSettled();
  EXPECT_EQ(3u, state_->counters.requests.load());
}

TEST_F(ServerConnectionTest, AnUnknownMethodIsRefusedWithoutAdmittingIt) {
  Open();
  Send("Nope 4 x\nEcho 5 y\n");
  EXPECT_EQ("error 4 " + std::to_string(ENOMETHOD), Answer());
  EXPECT_EQ("reply 5 y", Answer());
  EXPECT_EQ(1u, state_->counters.rejected_unknown.load());
  ExpectAdmissionSettled();
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
  handler_.Release();
  EXPECT_EQ("reply 6 held", Answer());
  EXPECT_EQ(1, handler_.runs.load());
  ExpectAdmissionSettled();
  EXPECT_EQ(1u, state_->counters.rejected_limit.load());
}

TEST_F(ServerConnectionTest, AStoppingServerRefusesNewCallsWithELOGOFF) {
  Open();
  Send("Echo 8 before\n");
  EXPECT_EQ("reply 8 before", Answer());
  ASSERT_TRUE(state_->admission.StartStopping());
  Send("Echo 9 after\n");
  EXPECT_EQ("error 9 " + std::to_string(ELOGOFF), Answer());
  EXPECT_EQ(1, handler_.runs.load());
  EXPECT_EQ(1u, state_->counters.rejected_stopping.load());
  ExpectAdmissionSettled();
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
}

TEST_F(ServerConnectionTest, AMalformedRequestClosesTheConnectionAfterTheCallsBeforeIt) {
  Open();
  Send("Echo 13 a\n\n");
  EXPECT_EQ("reply 13 a", Answer());
  asio::error_code error;
  char byte;
  sockets_.client.read_some(asio::buffer(&byte, 1), error);
  EXPECT_EQ(asio::error::eof, error) << error.message();
  EXPECT_EQ(1u, state_->counters.malformed_frames.load());
  ExpectAdmissionSettled();
}

}  // namespace
}  // namespace arenarpc::server
