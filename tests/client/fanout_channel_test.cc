// ParallelChannel, PartitionChannel and SelectiveChannel over Channels to FakeServers that answer, fail or never
// answer: merging in sub-channel order, fail_limit, timeouts, skipped and bad sub-calls, retries
// across sub-channels only for requests that did not run.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "arenarpc/error_codes.h"
#include "arenarpc/parallel_channel.h"
#include "arenarpc/partition_channel.h"
#include "arenarpc/selective_channel.h"
#include "client_test_util.h"

namespace arenarpc::testing {
namespace {

using example::EchoRequest;
using example::EchoResponse;
using example::EchoService_Stub;
using std::chrono::milliseconds;

FakeServer::Handler FailingHandler() {
  return [](const std::shared_ptr<FakeConnection>& connection, FakeRequest&& request) {
    connection->ReplyError(request.meta.correlation_id(), EINTERNAL, "this one fails");
  };
}
FakeServer::Handler SilentHandler() {
  return [](const std::shared_ptr<FakeConnection>&, FakeRequest&&) {};
}

// Sub-call i asks for "<request>#i".
class SuffixMapper : public CallMapper {
 public:
  SubCall Map(int index, int, const google::protobuf::MethodDescriptor* method,
              const google::protobuf::Message* request, google::protobuf::Message* response) override {
    auto* sub = new EchoRequest(static_cast<const EchoRequest&>(*request));
    sub->set_message(sub->message() + "#" + std::to_string(index));
    return SubCall(method, sub, response->New(), SubCall::DELETE_REQUEST | SubCall::DELETE_RESPONSE);
  }
};
// Concatenates the messages, so the test sees which sub-calls were merged, in which order.
class ConcatMerger : public ResponseMerger {
 public:
  Result Merge(google::protobuf::Message* response,
               const google::protobuf::Message* sub_response) override {
    auto* out = static_cast<EchoResponse*>(response);
    out->set_message(out->message() + static_cast<const EchoResponse*>(sub_response)->message());
    return MERGED;
  }
};

class Fanout : public ::testing::Test {
 protected:
  // Servers: 0 echoes, 1 fails every call, 2 never answers.
  void SetUp() override {
    servers_.push_back(std::make_unique<FakeServer>(EchoHandler()));
    servers_.push_back(std::make_unique<FakeServer>(FailingHandler()));
    servers_.push_back(std::make_unique<FakeServer>(SilentHandler()));
    for (auto& server : servers_) {
      channels_.push_back(std::make_unique<Channel>());
      ChannelOptions options = TestOptions();
      ASSERT_EQ(channels_.back()->Init(server->address(), &options), 0);
    }
  }
  // A ParallelChannel over the given servers' channels, with SuffixMapper and ConcatMerger.
  std::unique_ptr<ParallelChannel> Parallel(const std::vector<int>& which, int fail_limit,
                                            int64_t timeout_ms = 300) {
    auto channel = std::make_unique<ParallelChannel>();
    ParallelChannelOptions options;
    options.fail_limit = fail_limit;
    options.timeout_ms = timeout_ms;
    channel->Init(&options);
    auto* mapper = new SuffixMapper;
    auto* merger = new ConcatMerger;
    for (int i : which) {
      EXPECT_EQ(channel->AddChannel(channels_[i].get(), DOESNT_OWN_CHANNEL, mapper, merger), 0);
    }
    return channel;
  }
  static void Call(google::protobuf::RpcChannel* channel, Controller* cntl, EchoResponse* response) {
    EchoRequest request = Request("m");
    EchoService_Stub(channel).Echo(cntl, &request, response, nullptr);
  }

  std::vector<std::unique_ptr<FakeServer>> servers_;
  std::vector<std::unique_ptr<Channel>> channels_;
};

TEST_F(Fanout, ParallelMergesEverySubResponseInSubChannelOrder) {
  auto channel = Parallel({0, 0, 0}, -1);
  EchoResponse response;
  Controller cntl;
  Call(channel.get(), &cntl, &response);
  ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
  EXPECT_EQ(response.message(), "m#0m#1m#2");
}

TEST_F(Fanout, ParallelToleratesFailuresBelowFailLimit) {
  // One answers, one fails, one times out: 2 failures < fail_limit 3 (the default: all).
  auto channel = Parallel({0, 1, 2}, -1, 200);
  EchoResponse response;
  Controller cntl;
  Call(channel.get(), &cntl, &response);
  ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
  EXPECT_EQ(response.message(), "m#0");
  EXPECT_GE(cntl.latency_us(), 200'000);  // waited for the silent one's timeout
}

TEST_F(Fanout, ParallelFailsAtFailLimitAndCancelsTheRest) {
  auto channel = Parallel({0, 1, 2}, 1, 5000);
  EchoResponse response;
  Controller cntl;
  Call(channel.get(), &cntl, &response);
  EXPECT_EQ(cntl.ErrorCode(), ETOOMANYFAILS) << cntl.ErrorText();
  EXPECT_NE(cntl.ErrorText().find("[C1][E2001]"), std::string::npos) << cntl.ErrorText();
  EXPECT_LT(cntl.latency_us(), 2'000'000);  // the silent sub-call was cancelled, not waited for
}

TEST_F(Fanout, ParallelTimeoutsCountAsFailures) {
  auto channel = Parallel({1, 2}, 2, 200);
  EchoResponse response;
  Controller cntl;
  Call(channel.get(), &cntl, &response);
  EXPECT_EQ(cntl.ErrorCode(), ETOOMANYFAILS) << cntl.ErrorText();
  EXPECT_NE(cntl.ErrorText().find("[C1][E1008]"), std::string::npos) << cntl.ErrorText();
  EXPECT_GE(cntl.latency_us(), 200'000);
}

TEST_F(Fanout, ParallelAsyncRunsDoneOnceAfterEverySubCall) {
  auto channel = Parallel({0, 0}, -1);
  Controller cntl;
  EchoRequest request = Request("a");
  EchoResponse response;
  CountingDone done;
  EchoService_Stub(channel.get()).Echo(&cntl, &request, &response, &done);
  ASSERT_TRUE(done.WaitForRuns(1));
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(done.runs(), 1);
  EXPECT_FALSE(cntl.Failed()) << cntl.ErrorText();
  EXPECT_EQ(response.message(), "a#0a#1");
}

TEST_F(Fanout, ParallelSkippedAndBadSubCalls) {
  class SkipAll : public CallMapper {
   public:
    SubCall Map(int, int, const google::protobuf::MethodDescriptor*, const google::protobuf::Message*,
                google::protobuf::Message*) override {
      return SubCall::Skip();
    }
  };
  class BadSecond : public CallMapper {
   public:
    SubCall Map(int index, int, const google::protobuf::MethodDescriptor* method,
                const google::protobuf::Message* request,
                google::protobuf::Message* response) override {
      if (index == 1) return SubCall::Bad();
      return SubCall(method, request, response->New(), SubCall::DELETE_RESPONSE);
    }
  };
  ParallelChannel skipping, bad;
  skipping.Init(nullptr);
  bad.Init(nullptr);
  auto* skip_all = new SkipAll;
  auto* bad_second = new BadSecond;
  for (int i = 0; i < 2; ++i) {
    skipping.AddChannel(channels_[0].get(), DOESNT_OWN_CHANNEL, skip_all, nullptr);
    bad.AddChannel(channels_[0].get(), DOESNT_OWN_CHANNEL, bad_second, nullptr);
  }
  EchoResponse response;
  Controller skipped, failed;
  Call(&skipping, &skipped, &response);
  Call(&bad, &failed, &response);
  EXPECT_EQ(skipped.ErrorCode(), ECANCELED);
  EXPECT_EQ(failed.ErrorCode(), EREQUEST);
  EXPECT_EQ(servers_[0]->requests_received(), 0);
}

// Setup errors follow the API's one convention: -1, and last_error() names the problem.
TEST(FanoutSetup, InitAndAddChannelFailuresSayWhy) {
  ParallelChannel parallel;
  ParallelChannelOptions bad_parallel;
  bad_parallel.timeout_ms = 0;
  EXPECT_EQ(parallel.Init(&bad_parallel), -1);
  EXPECT_NE(parallel.last_error().find("timeout_ms=0"), std::string::npos) << parallel.last_error();
  EXPECT_EQ(parallel.Init(nullptr), 0);
  EXPECT_EQ(parallel.last_error(), "");
  EXPECT_EQ(parallel.AddChannel(nullptr, DOESNT_OWN_CHANNEL, nullptr, nullptr), -1);
  EXPECT_EQ(parallel.last_error(), "AddChannel(nullptr)");

  SelectiveChannel selective;
  EXPECT_EQ(selective.Init("la", nullptr), -1);
  EXPECT_NE(selective.last_error().find("\"la\""), std::string::npos) << selective.last_error();
  ChannelOptions bad_options;
  bad_options.max_retry = -1;
  EXPECT_EQ(selective.Init("rr", &bad_options), -1);
  EXPECT_NE(selective.last_error().find("max_retry=-1"), std::string::npos);
  EXPECT_EQ(selective.Init("rr", nullptr), 0);
  EXPECT_EQ(selective.Init("rr", nullptr), -1);
  EXPECT_NE(selective.last_error().find("already initialized"), std::string::npos);
}

TEST_F(Fanout, SelectiveRetriesARequestThatDidNotRunOnAnotherSubChannel) {
  SelectiveChannel channel;
  ChannelOptions options = TestOptions();
  options.max_retry = 1;
  ASSERT_EQ(channel.Init("rr", &options), 0);
  ChannelOptions sub_options = TestOptions();
  sub_options.max_retry = 0;
  auto refused = std::make_unique<Channel>();
  ASSERT_EQ(refused->Init(("127.0.0.1:" + std::to_string(UnusedPort())).c_str(), nullptr,
                          &sub_options), 0);
  auto good = std::make_unique<Channel>();
  ASSERT_EQ(good->Init(servers_[0]->address(), &sub_options), 0);
  ASSERT_EQ(channel.AddChannel(refused.release(), nullptr), 0);
  ASSERT_EQ(channel.AddChannel(good.release(), nullptr), 0);
  int retried = 0;
  for (int i = 0; i < 4; ++i) {
    EchoResponse response;
    Controller cntl;
  Call(&channel, &cntl, &response);
    ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
    EXPECT_EQ(response.message(), "m");
    EXPECT_EQ(cntl.remote_side(), servers_[0]->address());
    retried += cntl.retried_count();
  }
  EXPECT_EQ(retried, 2);  // round robin: every other call started on the refused one
}

TEST_F(Fanout, SelectiveDoesNotResendARequestThatMayHaveRun) {
  SelectiveChannel channel;
  ChannelOptions options = TestOptions();
  options.max_retry = 3;
  ASSERT_EQ(channel.Init("rr", &options), 0);
  ChannelOptions sub_options = TestOptions();
  for (int i : {1, 0}) {
    auto sub = std::make_unique<Channel>();
    ASSERT_EQ(sub->Init(servers_[i]->address(), &sub_options), 0);
    ASSERT_EQ(channel.AddChannel(sub.release(), nullptr), 0);
  }
  EchoResponse response;
  Controller first;
  Call(&channel, &first, &response);  // starts at the failing server: its reply counts
  EXPECT_EQ(first.ErrorCode(), EINTERNAL) << first.ErrorText();
  EXPECT_EQ(first.retried_count(), 0);
  Controller second;
  Call(&channel, &second, &response);
  EXPECT_FALSE(second.Failed()) << second.ErrorText();
  EXPECT_EQ(servers_[1]->requests_received(), 1);
}

// Tags "index/kinds".
class SlashParser : public PartitionParser {
 public:
  bool ParseFromTag(const std::string& tag, Partition* out) override {
    return std::sscanf(tag.c_str(), "%d/%d", &out->index, &out->num_partition_kinds) == 2;
  }
};

TEST_F(Fanout, PartitionChannelCallsOneServerOfEveryPartitionByTag) {
  servers_.push_back(std::make_unique<FakeServer>(EchoHandler()));
  servers_.push_back(std::make_unique<FakeServer>(EchoHandler()));
  // servers 0 and 3: partition 0 of 2; server 4: partition 1 of 2; server 1: another kind count.
  const std::string url = "list://" + servers_[0]->address() + " 1 0/2," + servers_[3]->address() +
                          " 1 0/2," + servers_[4]->address() + " 1 1/2," +
                          servers_[1]->address() + " 1 0/3";
  PartitionChannel channel;
  PartitionChannelOptions options;
  options.call_mapper = new SuffixMapper;
  options.response_merger = new ConcatMerger;
  ASSERT_EQ(channel.Init(2, new SlashParser, url.c_str(), "rr", &options), 0)
      << channel.last_error();
  ASSERT_EQ(channel.partition_count(), 2);
  EXPECT_EQ(channel.servers(0).size(), 2u);
  ASSERT_EQ(channel.servers(1).size(), 1u);
  EXPECT_EQ(channel.servers(1)[0].address, servers_[4]->address());
  for (int i = 0; i < 4; ++i) {
    EchoResponse response;
    Controller cntl;
    Call(&channel, &cntl, &response);
    ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
    EXPECT_EQ(response.message(), "m#0m#1");
  }
  EXPECT_EQ(servers_[0]->requests_received(), 2);  // rr inside partition 0
  EXPECT_EQ(servers_[3]->requests_received(), 2);
  EXPECT_EQ(servers_[4]->requests_received(), 4);
  EXPECT_EQ(servers_[1]->requests_received(), 0);
}

TEST_F(Fanout, PartitionChannelWithAnEmptyPartitionFailsItsSubCall) {
  const std::string url = "list://" + servers_[0]->address() + " 1 0/2";
  PartitionChannel tolerant, strict;
  PartitionChannelOptions options;
  ASSERT_EQ(tolerant.Init(2, new SlashParser, url.c_str(), "rr", &options), 0);
  options.fail_limit = 1;
  ASSERT_EQ(strict.Init(2, new SlashParser, url.c_str(), "rr", &options), 0);
  EchoResponse response;
  Controller ok, failed;
  Call(&tolerant, &ok, &response);
  EXPECT_FALSE(ok.Failed()) << ok.ErrorText();
  EXPECT_EQ(response.message(), "m");
  Call(&strict, &failed, &response);
  EXPECT_EQ(failed.ErrorCode(), ETOOMANYFAILS) << failed.ErrorText();
  EXPECT_NE(failed.ErrorText().find("[C1][E112]"), std::string::npos) << failed.ErrorText();
}

}  // namespace
}  // namespace arenarpc::testing
