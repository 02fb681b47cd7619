// Client call ids (Join, StartCancel), done on the callback threads, brpc's Init shapes.
#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <memory>
#include <thread>
#include <vector>

#include "client_test_util.h"

namespace arenarpc::testing {
namespace {

using example::EchoRequest;
using example::EchoResponse;
using example::EchoService_Stub;

std::string ThreadName() {
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  return name;
}

TEST(ChannelCancel, StartCancelFailsASlowAsyncCallOnce) {
  Parked parked;
  FakeServer server(parked.Handler());
  Channel channel;
  ChannelOptions options = TestOptions();
  options.timeout_ms = -1;  // only the cancel can end it
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  Controller cntl;
  EchoRequest request = Request("slow");
  EchoResponse response;
  CountingDone done;
  const CallId id = cntl.call_id();
  EchoService_Stub(&channel).Echo(&cntl, &request, &response, &done);
  ASSERT_TRUE(FakeServer::WaitFor([&] { return parked.size() == 1; }));
  EXPECT_EQ(done.runs(), 0);
  StartCancel(id);
  Join(id);  // returns once done has run
  EXPECT_EQ(done.runs(), 1);
  EXPECT_EQ(cntl.ErrorCode(), ECANCELED);
  EXPECT_NE(cntl.ErrorText().find("canceled"), std::string::npos) << cntl.ErrorText();
  // Cancelling again, or the reply arriving after all, changes nothing.
  StartCancel(id);
  parked.ReplyAll();
  ASSERT_TRUE(FakeServer::WaitFor([&] { return channel.stats().dropped_responses == 1; }));
  EXPECT_EQ(done.runs(), 1);
  EXPECT_EQ(cntl.ErrorCode(), ECANCELED);
  EXPECT_FALSE(response.has_message());
}

TEST(ChannelCancel, CancelAfterCompletionIsANoOp) {
  FakeServer server(EchoHandler());
  Channel channel;
  ChannelOptions options = TestOptions();
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  Controller cntl;
  EchoRequest request = Request("quick");
  EchoResponse response;
  CountingDone done;
  const CallId id = cntl.call_id();
  EchoService_Stub(&channel).Echo(&cntl, &request, &response, &done);
  Join(id);
  EXPECT_EQ(done.runs(), 1);
  StartCancel(id);
  cntl.StartCancel();
  EXPECT_FALSE(cntl.Failed()) << cntl.ErrorText();
  EXPECT_EQ(response.message(), "quick");
  EXPECT_EQ(done.runs(), 1);
}

TEST(ChannelCancel, ControllerStartCancelEndsASynchronousCall) {
  Parked parked;
  FakeServer server(parked.Handler());
  Channel channel;
  ChannelOptions options = TestOptions();
  options.timeout_ms = -1;
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  Controller cntl;
  EchoRequest request = Request("blocked");
  EchoResponse response;
  std::thread canceller([&] {
    ASSERT_TRUE(FakeServer::WaitFor([&] { return parked.size() == 1; }));
    cntl.StartCancel();
  });
  EchoService_Stub(&channel).Echo(&cntl, &request, &response, nullptr);  // blocks until canceled
  canceller.join();
  EXPECT_EQ(cntl.ErrorCode(), ECANCELED);
}

TEST(ChannelJoin, WaitsUntilDoneReturned) {
  FakeServer server(EchoHandler());
  Channel channel;
  ChannelOptions options = TestOptions();
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  Controller cntl;
  EchoRequest request = Request("join");
  EchoResponse response;
  std::atomic<bool> done_finished{false};
  const CallId id = cntl.call_id();
  google::protobuf::Closure* done = NewCallback(
      +[](std::atomic<bool>* finished) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        finished->store(true);
      },
      &done_finished);
  EchoService_Stub(&channel).Echo(&cntl, &request, &response, done);
  Join(id);
  EXPECT_TRUE(done_finished.load());
  EXPECT_EQ(response.message(), "join");
}

TEST(ChannelJoin, SemiSynchronousCallsWithDoNothing) {
  FakeServer server(EchoHandler());
  Channel channel;
  ChannelOptions options = TestOptions();
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  EchoService_Stub stub(&channel);
  Controller cntl[2];
  EchoRequest request[2] = {Request("a"), Request("b")};
  EchoResponse response[2];
  for (int i = 0; i < 2; ++i) stub.Echo(&cntl[i], &request[i], &response[i], DoNothing());
  for (auto& c : cntl) Join(c.call_id());
  for (int i = 0; i < 2; ++i) {
    EXPECT_FALSE(cntl[i].Failed()) << cntl[i].ErrorText();
    EXPECT_EQ(response[i].message(), request[i].message());
  }
}

// The point of callback_threads: brpc code makes synchronous calls from inside done.
TEST(ChannelCallbacks, SynchronousCallFromInsideDoneWorks) {
  FakeServer server(EchoHandler());
  Channel channel;
  ChannelOptions options = TestOptions();  // callback_threads = 1 by default
  ASSERT_EQ(options.callback_threads, 1);
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  EchoService_Stub stub(&channel);
  Controller outer, inner;
  EchoRequest request = Request("outer");
  EchoResponse outer_response, inner_response;
  std::string done_thread;
  const CallId id = outer.call_id();
  auto on_done = [&] {
    done_thread = ThreadName();
    EchoRequest inner_request = Request("inner");
    stub.Echo(&inner, &inner_request, &inner_response, nullptr);
  };
  google::protobuf::Closure* done =
      NewCallback(+[](decltype(on_done)* f) { (*f)(); }, &on_done);
  stub.Echo(&outer, &request, &outer_response, done);
  Join(id);
  EXPECT_FALSE(outer.Failed()) << outer.ErrorText();
  EXPECT_FALSE(inner.Failed()) << inner.ErrorText();
  EXPECT_EQ(inner_response.message(), "inner");
  EXPECT_EQ(done_thread.rfind("arpc-done", 0), 0u) << done_thread;
}

TEST(ChannelCallbacks, ZeroRunsDoneOnTheIoThread) {
  FakeServer server(EchoHandler());
  Channel channel;
  ChannelOptions options = TestOptions();
  options.callback_threads = 0;
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  Controller cntl;
  EchoRequest request = Request("io");
  EchoResponse response;
  std::string done_thread;
  const CallId id = cntl.call_id();
  EchoService_Stub(&channel).Echo(
      &cntl, &request, &response,
      NewCallback(+[](std::string* name) { *name = ThreadName(); }, &done_thread));
  Join(id);
  EXPECT_FALSE(cntl.Failed()) << cntl.ErrorText();
  EXPECT_EQ(done_thread.rfind("arpc-client", 0), 0u) << done_thread;
}

TEST(ChannelInit, BrpcShapes) {
  FakeServer server(EchoHandler());
  ChannelOptions options = TestOptions();
  {
    Channel channel;
    ASSERT_EQ(channel.Init(server.address().c_str(), "", &options), 0) << channel.last_error();
    Controller cntl;
    EchoRequest request = Request("lb");
    EchoResponse response;
    EchoService_Stub(&channel).Echo(&cntl, &request, &response, nullptr);
    EXPECT_EQ(response.message(), "lb") << cntl.ErrorText();
  }
  {
    Channel channel;
    ASSERT_EQ(channel.Init(server.address().c_str(), nullptr, nullptr), 0) << channel.last_error();
  }
  {
    Channel channel;
    ASSERT_EQ(channel.Init("127.0.0.1", server.port(), &options), 0) << channel.last_error();
    EXPECT_EQ(channel.remote_side(), server.address());
  }
  {
    Channel channel;
    EXPECT_EQ(channel.Init("list://127.0.0.1:1,127.0.0.1:2", "no_such_lb", &options), -1);
    EXPECT_NE(channel.last_error().find("load balancer 'no_such_lb' is unknown"),
              std::string::npos)
        << channel.last_error();
    // A naming URL with a known balancer is a cluster channel (tests/cluster).
    EXPECT_EQ(channel.Init(("list://" + server.address()).c_str(), "rr", &options), 0)
        << channel.last_error();
  }
  {
    Channel channel;
    ChannelOptions bad = options;
    bad.protocol = "http";
    EXPECT_EQ(channel.Init(server.address().c_str(), "", &bad), -1);
    EXPECT_NE(channel.last_error().find("protocol=\"http\""), std::string::npos);
    bad = options;
    bad.callback_threads = -1;
    EXPECT_EQ(channel.Init(server.address(), &bad), -1);
    EXPECT_NE(channel.last_error().find("callback_threads=-1"), std::string::npos);
  }
}

}  // namespace
}  // namespace arenarpc::testing
