// The Channel against a real arenarpc::Server on loopback, in every server memory strategy:
// sync and async calls in all three connection types, the caller's arena, attachments and
// compression both ways, handler failures and unknown methods as the client reports them.
#include <google/protobuf/arena.h>

#include <thread>
#include <vector>

#include "arenarpc/server.h"
#include "client_test_util.h"
#include "echo/echo.pb.h"

namespace arenarpc::testing {
namespace {

using ::example::EchoRequest;
using ::example::EchoResponse;
using ::example::EchoService_Stub;

class EchoImpl : public ::example::EchoService {
 public:
  void Echo(google::protobuf::RpcController* rpc_controller, const EchoRequest* request,
            EchoResponse* response, google::protobuf::Closure* done) override {
    auto* cntl = static_cast<Controller*>(rpc_controller);
    if (request->message() == "fail") {
      cntl->SetFailed(EINVAL, "bad");
    } else {
      response->set_message(request->message());
      if (request->has_blob()) response->set_blob(request->blob());
      response->mutable_nested()->CopyFrom(request->nested());
      cntl->response_attachment().AppendShared(cntl->request_attachment());
      cntl->set_response_compress_type(cntl->request_compress_type());
      log_id_seen_.store(cntl->log_id());
    }
    done->Run();
  }
  int64_t log_id_seen() const { return log_id_seen_.load(); }

 private:
  std::atomic<int64_t> log_id_seen_{0};
};

class ChannelWithServer : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.memory_mode = GetParam();
    options.num_threads = 2;
    ASSERT_EQ(server_.AddService(&service_, SERVER_DOESNT_OWN_SERVICE), 0) << server_.last_error();
    ASSERT_EQ(server_.Start("127.0.0.1:0", options), 0) << server_.last_error();
    address_ = "127.0.0.1:" + std::to_string(server_.listen_port());
  }

  EchoImpl service_;
  Server server_;
  std::string address_;
};

TEST_P(ChannelWithServer, SyncAndAsyncCallsInEveryConnectionType) {
  for (const char* type : {"single", "pooled", "short"}) {
    Channel channel;
    ChannelOptions options = TestOptions(type);
    options.timeout_ms = 10000;
    ASSERT_EQ(channel.Init(address_, &options), 0) << channel.last_error();
    EchoService_Stub stub(&channel);
    constexpr int kThreads = 3, kCalls = 20;
    std::atomic<int> ok{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kCalls; ++i) {
          Controller cntl;
          cntl.set_log_id(1000 + i);
          EchoRequest request;
          request.set_message(std::string(type) + "/" + std::to_string(t) + "/" + std::to_string(i));
          EchoResponse response;
          if (i % 2 == 0) {
            stub.Echo(&cntl, &request, &response, nullptr);
          } else {
            CountingDone done;
            stub.Echo(&cntl, &request, &response, &done);
            if (!done.WaitForRuns(1)) ADD_FAILURE() << "async call never completed";
          }
          if (!cntl.Failed() && response.message() == request.message()) {
            ok.fetch_add(1);
          } else {
            ADD_FAILURE() << type << ": " << cntl.ErrorText();
          }
        }
      });
    }
    for (auto& thread : threads) thread.join();
    EXPECT_EQ(ok.load(), kThreads * kCalls) << type;
    EXPECT_GE(service_.log_id_seen(), 1000);
  }
}

TEST_P(ChannelWithServer, CallerArenaAttachmentsAndCompression) {
  Channel channel;
  ChannelOptions options = TestOptions();
  options.timeout_ms = 10000;
  ASSERT_EQ(channel.Init(address_, &options), 0);
  EchoService_Stub stub(&channel);
  for (CompressType type : {CompressType::kNone, CompressType::kSnappy, CompressType::kGzip,
                            CompressType::kZlib}) {
    google::protobuf::Arena arena;
    auto* request = google::protobuf::Arena::CreateMessage<EchoRequest>(&arena);
    auto* response = google::protobuf::Arena::CreateMessage<EchoResponse>(&arena);
    request->set_message(std::string(2000, 'a'));
    for (int i = 0; i < 20; ++i) request->add_nested()->set_text("n" + std::to_string(i));
    Controller cntl;
    cntl.set_request_compress_type(type);
    cntl.request_attachment().Append("attached bytes");
    stub.Echo(&cntl, request, response, nullptr);
    ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
    EXPECT_EQ(response->message(), request->message());
    ASSERT_EQ(response->nested_size(), 20);
    EXPECT_EQ(response->nested(19).text(), "n19");
    EXPECT_EQ(response->nested(19).GetArena(), &arena);
    EXPECT_EQ(cntl.response_attachment().ToString(), "attached bytes");
    EXPECT_EQ(cntl.response_compress_type(), type);
  }
}

TEST_P(ChannelWithServer, HandlerFailureAndUnknownMethod) {
  Channel channel;
  ChannelOptions options = TestOptions();
  options.timeout_ms = 10000;
  ASSERT_EQ(channel.Init(address_, &options), 0);
  {
    Controller cntl;
    EchoRequest request;
    request.set_message("fail");
    EchoResponse response;
    EchoService_Stub(&channel).Echo(&cntl, &request, &response, nullptr);
    EXPECT_EQ(cntl.ErrorCode(), EINVAL);
    EXPECT_NE(cntl.ErrorText().find("[E22]"), std::string::npos) << cntl.ErrorText();
    EXPECT_NE(cntl.ErrorText().find("bad"), std::string::npos) << cntl.ErrorText();
  }
  {
    // The workload's arenarpc.example.EchoService is not registered on this server.
    Controller cntl;
    arenarpc::example::EchoRequest request;
    arenarpc::example::EchoResponse response;
    arenarpc::example::EchoService_Stub(&channel).Echo(&cntl, &request, &response, nullptr);
    EXPECT_EQ(cntl.ErrorCode(), ENOMETHOD);
    EXPECT_NE(cntl.ErrorText().find("Fail to find method=arenarpc.example.EchoService/Echo"),
              std::string::npos)
        << cntl.ErrorText();
  }
}

TEST_P(ChannelWithServer, CallsAfterServerStopFailFast) {
  Channel channel;
  ChannelOptions options = TestOptions();
  options.timeout_ms = 10000;
  options.max_retry = 0;
  ASSERT_EQ(channel.Init(address_, &options), 0);
  EchoService_Stub stub(&channel);
  Controller cntl;
  EchoRequest request;
  request.set_message("before");
  EchoResponse response;
  stub.Echo(&cntl, &request, &response, nullptr);
  ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
  server_.Stop();
  server_.Join();
  // The server closed the connection: the next call fails fast (connection error), no hang.
  Controller after;
  const auto start = std::chrono::steady_clock::now();
  stub.Echo(&after, &request, &response, nullptr);
  EXPECT_TRUE(after.Failed());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

INSTANTIATE_TEST_SUITE_P(AllModes, ChannelWithServer,
                         ::testing::Values("heap", "arena", "paged", "reuse"));

}  // namespace
}  // namespace arenarpc::testing
