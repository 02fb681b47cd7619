// brpc's API shapes end to end: Server::Start(port|addr, &options), server-side cancellation
// (IsCanceled/NotifyOnCancel: client disconnect, deadline, normal end), a handler with
// ClosureGuard + SetFailed(code, fmt) and an async call with NewCallback.

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "arenarpc/channel.h"
#include "arenarpc/server.h"
#include "e2e_test.pb.h"
#include "raw_client.h"

namespace arenarpc::e2e {
namespace {

using std::chrono::milliseconds;

// Echo registers a cancel callback. delay_ms > 0: the reply waits (on a thread, up to delay_ms)
// for the cancellation, then records what the handler saw. fail_code != 0: fails the call.
class CancelService final : public TestService {
 public:
  ~CancelService() override {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mutex_);
      threads.swap(threads_);
    }
    for (auto& thread : threads) thread.join();
  }

  void Echo(google::protobuf::RpcController* cntl_base, const TestRequest* request,
            TestResponse* response, google::protobuf::Closure* done) override {
    ClosureGuard done_guard(done);
    auto* cntl = static_cast<Controller*>(cntl_base);
    if (request->async()) {  // the reply waits for the cancellation (or the end: never here)
      cntl->NotifyOnCancel(NewCallback(this, &CancelService::ReplyOnCancel, cntl,
                                       done_guard.release()));
      Started();
      return;
    }
    cntl->NotifyOnCancel(NewCallback(this, &CancelService::OnCancel, cntl));
    Started();
    if (request->fail_code() != 0) {
      cntl->SetFailed(request->fail_code(), "no %s for #%d", request->message().c_str(), 7);
      return;
    }
    response->set_message(request->message());
    cntl->response_attachment().append(cntl->request_attachment());
    cntl->response_user_fields()["local_side"] = cntl->local_side();
    if (request->delay_ms() <= 0) return;  // done_guard replies now
    std::lock_guard lock(mutex_);
    threads_.emplace_back([this, cntl, done = done_guard.release(), wait = request->delay_ms()] {
      std::unique_lock lock(mutex_);
      cv_.wait_for(lock, milliseconds(wait), [&] { return notified_ > 0; });
      seen_canceled_ = cntl->IsCanceled();
      lock.unlock();
      bool late_ran = false;  // already canceled: a callback registered now runs at once
      cntl->NotifyOnCancel(NewCallback(+[](bool* ran) { *ran = true; }, &late_ran));
      lock.lock();
      late_callback_ran_at_once_ = late_ran;
      lock.unlock();
      done->Run();
    });
  }

  // Waits until `n` handlers in total registered their cancel callback. (A call counts in flight
  // once admitted, before its handler runs: a client that closes then cancels a call that has not
  // started, whose handler never runs.)
  bool WaitForStarted(int n) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, std::chrono::seconds(5), [&] { return started_ >= n; });
  }
  // Waits until the cancel callbacks ran `n` times in total.
  bool WaitForNotified(int n) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, std::chrono::seconds(5), [&] { return notified_ >= n; });
  }
  int notified() {
    std::lock_guard lock(mutex_);
    return notified_;
  }
  bool canceled_in_callback() {
    std::lock_guard lock(mutex_);
    return canceled_in_callback_;
  }
  bool seen_canceled() {
    std::lock_guard lock(mutex_);
    return seen_canceled_;
  }
  bool late_callback_ran_at_once() {
    std::lock_guard lock(mutex_);
    return late_callback_ran_at_once_;
  }

 private:
  void Started() {
    std::lock_guard lock(mutex_);
    ++started_;
    cv_.notify_all();
  }
  void ReplyOnCancel(Controller* cntl, google::protobuf::Closure* done) {
    OnCancel(cntl);
    done->Run();  // ends the call from inside its own cancel callback
  }
  void OnCancel(Controller* cntl) {
    const bool canceled = cntl->IsCanceled();
    std::lock_guard lock(mutex_);
    ++notified_;
    canceled_in_callback_ = canceled;
    cv_.notify_all();
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::thread> threads_;
  int notified_ = 0, started_ = 0;
  bool canceled_in_callback_ = false, seen_canceled_ = false, late_callback_ran_at_once_ = false;
};

class BrpcApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(0, server_.AddService(&service_, SERVER_DOESNT_OWN_SERVICE));
    ServerOptions options;
    options.num_threads = 2;
    ASSERT_EQ(0, server_.Start(0, &options)) << server_.last_error();  // brpc's Start(port, &opts)
    ASSERT_GT(server_.listen_port(), 0);
  }

  // Polls GetServerStats().in_flight until it equals n (up to ~1 s).
  bool WaitForInFlight(int64_t n) {
    for (int i = 0; i < 500 && server_.GetServerStats().in_flight != n; ++i) {
      std::this_thread::sleep_for(milliseconds(2));
    }
    return server_.GetServerStats().in_flight == n;
  }

  TestRequest Request(const std::string& message, int delay_ms = 0) {
    TestRequest request;
    request.set_message(message);
    if (delay_ms > 0) request.set_delay_ms(delay_ms);
    return request;
  }

  CancelService service_;  // outlives the server: its threads end after the server stopped
  Server server_;
};

TEST_F(BrpcApiTest, NormalCallRunsTheCancelCallbackOnceAtTheEnd) {
  Channel channel;
  ChannelOptions options;
  options.timeout_ms = 10000;
  ASSERT_EQ(0, channel.Init(("127.0.0.1:" + std::to_string(server_.listen_port())).c_str(), "",
                            &options))
      << channel.last_error();
  TestService_Stub stub(&channel);
  Controller cntl;
  cntl.request_attachment().append("att");
  TestRequest request = Request("plain");
  TestResponse response;
  stub.Echo(&cntl, &request, &response, nullptr);
  ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
  EXPECT_EQ("plain", response.message());
  EXPECT_EQ("att", cntl.response_attachment().to_string());
  EXPECT_EQ("127.0.0.1:" + std::to_string(server_.listen_port()),
            cntl.response_user_fields()["local_side"]);
  EXPECT_EQ("", cntl.local_side());  // not known on the client
  ASSERT_TRUE(service_.WaitForNotified(1));
  std::this_thread::sleep_for(milliseconds(50));  // a second run would show up by now
  EXPECT_EQ(1, service_.notified());
  EXPECT_FALSE(service_.canceled_in_callback());
}

TEST_F(BrpcApiTest, ClientDisconnectCancelsTheCall) {
  RawClient client(server_.listen_port());
  ASSERT_TRUE(client.connected());
  TestRequest request = Request("hang", 5000);
  client.Send(RequestFor(&request));
  // Wait until the handler is in, then go away.
  ASSERT_TRUE(service_.WaitForStarted(1));
  const auto closed_at = std::chrono::steady_clock::now();
  client.Close();
  ASSERT_TRUE(service_.WaitForNotified(1));
  EXPECT_LT(std::chrono::steady_clock::now() - closed_at, std::chrono::seconds(4));  // not at end
  EXPECT_TRUE(service_.canceled_in_callback());
  EXPECT_TRUE(WaitForInFlight(0));  // the handler finished after the cancel
  EXPECT_TRUE(service_.seen_canceled());
  EXPECT_TRUE(service_.late_callback_ran_at_once());
  EXPECT_EQ(1, service_.notified());  // not again when done->Run() finished
}

TEST_F(BrpcApiTest, CancelCallbackMayEndTheCall) {
  RawClient client(server_.listen_port());
  ASSERT_TRUE(client.connected());
  TestRequest request = Request("reply-on-cancel");
  request.set_async(true);
  client.Send(RequestFor(&request));
  ASSERT_TRUE(service_.WaitForStarted(1));
  EXPECT_EQ(0, service_.notified());
  client.Close();
  ASSERT_TRUE(service_.WaitForNotified(1));
  EXPECT_TRUE(service_.canceled_in_callback());
  EXPECT_TRUE(WaitForInFlight(0));
  EXPECT_EQ(1, service_.notified());
}

TEST_F(BrpcApiTest, PassedDeadlineCancelsTheCall) {
  Channel channel;
  ChannelOptions options;
  options.timeout_ms = 200;
  options.deliver_timeout = true;  // the server learns the deadline from the request meta
  ASSERT_EQ(0, channel.Init("127.0.0.1", server_.listen_port(), &options)) << channel.last_error();
  TestService_Stub stub(&channel);
  Controller cntl;
  TestRequest request = Request("slow", 5000);
  TestResponse response;
  const auto start = std::chrono::steady_clock::now();
  stub.Echo(&cntl, &request, &response, nullptr);
  // The server's deadline (what was left of the 200 ms) and the client's expire together: the
  // handler's reply after its cancellation may or may not beat the client's timeout.
  EXPECT_TRUE(!cntl.Failed() || cntl.ErrorCode() == ERPCTIMEDOUT) << cntl.ErrorText();
  ASSERT_TRUE(service_.WaitForNotified(1));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
  EXPECT_TRUE(service_.canceled_in_callback());
  EXPECT_TRUE(WaitForInFlight(0));
  EXPECT_TRUE(service_.seen_canceled());
  EXPECT_EQ(1, service_.notified());
}

TEST_F(BrpcApiTest, HandlerFailureWithFormatAndAsyncCallWithNewCallback) {
  Channel channel;
  ChannelOptions options;
  options.timeout_ms = 10000;
  ASSERT_EQ(0, channel.Init("127.0.0.1", server_.listen_port(), &options));
  TestService_Stub stub(&channel);
  auto cntl = std::make_unique<Controller>();
  auto response = std::make_unique<TestResponse>();
  TestRequest request = Request("cake");
  request.set_fail_code(EPERM);
  struct Outcome {
    int code = 0;
    std::string text;
  } outcome;
  const CallId id = cntl->call_id();
  stub.Echo(cntl.get(), &request, response.get(),
            NewCallback(+[](Controller* c, TestResponse*, Outcome* out) {
              out->code = c->ErrorCode();
              out->text = c->ErrorText();
            }, cntl.get(), response.get(), &outcome));
  Join(id);
  EXPECT_EQ(EPERM, outcome.code);
  EXPECT_NE(std::string::npos, outcome.text.find("no cake for #7")) << outcome.text;
}

TEST(ServerStart, BrpcShapesAndTheirErrors) {
  CancelService service;
  {
    Server server;
    ASSERT_EQ(0, server.AddService(&service, SERVER_DOESNT_OWN_SERVICE));
    EXPECT_EQ(-1, server.Start(70000, nullptr));
    EXPECT_NE(std::string::npos, server.last_error().find("port 70000 is invalid"));
    EXPECT_EQ(-1, server.Start(static_cast<const char*>(nullptr), nullptr));
    ASSERT_EQ(0, server.Start("127.0.0.1:0", nullptr)) << server.last_error();  // defaults
    EXPECT_GT(server.listen_port(), 0);
    EXPECT_EQ(0, server.Stop(0));  // brpc's shapes of shutting down
    EXPECT_EQ(0, server.Join());
    EXPECT_EQ(-1, server.Start(0, nullptr));  // stopped servers do not restart
  }
}

}  // namespace
}  // namespace arenarpc::e2e
