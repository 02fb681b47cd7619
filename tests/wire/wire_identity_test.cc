// baidu_std runtime: the same handler and request sequence in every memory strategy (by name and
// as a strategy object) gives replies whose bytes equal heap's, call by call.
#include <google/protobuf/message.h>
#include <google/protobuf/stubs/callback.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "arenarpc/channel.h"
#include "arenarpc/controller.h"
#include "arenarpc/memory/message_memory.h"
#include "arenarpc/server.h"
#include "wire_handler.h"
#include "wire_service.pb.h"

namespace arenarpc::wire {
namespace {

constexpr int kCalls = 300;  // enough for pooled objects to meet many smaller requests

class WireServiceImpl final : public WireService {
 public:
  void Call(google::protobuf::RpcController*, const WireRequest* request, WireReply* reply,
            google::protobuf::Closure* done) override {
    Answer(*request, reply);
    done->Run();
  }
};

// Serves `requests` one by one with `options` and returns each reply's bytes.
std::vector<std::string> Replies(ServerOptions options, const std::vector<WireRequest>& requests) {
  WireServiceImpl service;
  Server server;
  EXPECT_EQ(0, server.AddService(&service, SERVER_DOESNT_OWN_SERVICE)) << server.last_error();
  options.num_threads = 1;
  EXPECT_EQ(0, server.Start("127.0.0.1:0", options)) << server.last_error();
  Channel channel;
  ChannelOptions channel_options;
  channel_options.timeout_ms = 10000;
  EXPECT_EQ(0, channel.Init("127.0.0.1:" + std::to_string(server.listen_port()), &channel_options))
      << channel.last_error();
  WireService_Stub stub(&channel);
  std::vector<std::string> replies;
  for (const WireRequest& request : requests) {
    Controller controller;
    WireReply reply;
    stub.Call(&controller, &request, &reply, nullptr);
    EXPECT_FALSE(controller.Failed()) << controller.ErrorText();
    replies.push_back(reply.SerializeAsString());  // canonical: field order, presence kept
  }
  server.Stop();
  server.Join();
  return replies;
}

void ExpectSameBytes(const std::vector<std::string>& expected, const std::vector<std::string>& got,
                     const std::string& what) {
  ASSERT_EQ(expected.size(), got.size()) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(expected[i], got[i]) << what << ": reply " << i << " differs from heap's";
  }
}

TEST(WireIdentity, EveryStrategyRepliesWithHeapsBytes) {
  const std::vector<WireRequest> requests = RequestSequence(kCalls);
  ServerOptions heap;
  heap.memory_mode = "heap";
  const std::vector<std::string> expected = Replies(heap, requests);
  for (const char* mode : {"arena", "paged", "reuse"}) {
    ServerOptions options;
    options.memory_mode = mode;
    ExpectSameBytes(expected, Replies(options, requests), mode);
  }
}

TEST(WireIdentity, StrategyObjectsServeLikeTheirNames) {
  const std::vector<WireRequest> requests = RequestSequence(kCalls / 3);
  ServerOptions heap;
  const std::vector<std::string> expected = Replies(heap, requests);
  auto reuse = memory::MakeMessageMemory("reuse");
  ServerOptions server_wide;
  server_wide.memory_strategy = reuse;
  ExpectSameBytes(expected, Replies(server_wide, requests), "memory_strategy");
  EXPECT_EQ(reuse->stats().acquired, requests.size());
  EXPECT_EQ(reuse->stats().released, requests.size());

  auto paged = memory::MakeMessageMemory("paged");
  ServerOptions per_method;
  per_method.memory_mode = "reuse";
  per_method.method_memory_strategy["arenarpc.wire.WireService.Call"] = paged;
  ExpectSameBytes(expected, Replies(per_method, requests), "method_memory_strategy");
  EXPECT_EQ(paged->stats().acquired, requests.size());
}

// A strategy written by a user: plain New()/delete, counting the runtime's lifecycle calls.
class CountingMemory final : public memory::MessageMemory {
 public:
  struct Counts {
    std::atomic<uint64_t> acquired{0}, parsed{0}, prepared{0}, released{0};
  };

  std::string_view name() const noexcept override { return "counting"; }
  std::unique_ptr<memory::MethodMemory> Bind(const google::protobuf::Message& request,
                                             const google::protobuf::Message& response) override {
    return std::make_unique<Method>(request, response, counts_);
  }
  memory::MemoryStats stats() const noexcept override {
    memory::MemoryStats s;
    s.acquired = counts_.acquired.load();
    s.released = counts_.released.load();
    return s;
  }
  const Counts& counts() const { return counts_; }

 private:
  class Method final : public memory::MethodMemory {
   public:
    Method(const google::protobuf::Message& request, const google::protobuf::Message& response,
           Counts& counts)
        : MethodMemory(request, response), counts_(counts) {}
    memory::MessagePair Acquire() override {
      std::unique_ptr<google::protobuf::Message> request(request_prototype().New());
      std::unique_ptr<google::protobuf::Message> response(response_prototype().New());
      ++counts_.acquired;
      return MakePair(request.release(), response.release(), nullptr, nullptr);
    }

   protected:
    void Release(google::protobuf::Message* request, google::protobuf::Message* response,
                 google::protobuf::Arena*, void*) noexcept override {
      std::unique_ptr<google::protobuf::Message> req(request), resp(response);
      ++counts_.released;
    }
    memory::ParseResult ParseRequest(google::protobuf::Message* request, void* cookie,
                                     memory::SerializedMessage& bytes) override {
      ++counts_.parsed;
      return MethodMemory::ParseRequest(request, cookie, bytes);
    }
    void PrepareResponse(google::protobuf::Message*, void*) noexcept override {
      ++counts_.prepared;
    }

   private:
    Counts& counts_;
  };

  Counts counts_;
};

TEST(WireIdentity, AUsersOwnStrategyPlugsIntoTheServer) {
  const std::vector<WireRequest> requests = RequestSequence(kCalls / 3);
  const std::vector<std::string> expected = Replies(ServerOptions(), requests);
  auto mine = std::make_shared<CountingMemory>();
  ServerOptions options;
  options.method_memory_strategy["arenarpc.wire.WireService.Call"] = mine;
  ExpectSameBytes(expected, Replies(options, requests), "CountingMemory");
  EXPECT_EQ(mine->counts().acquired.load(), requests.size());
  EXPECT_EQ(mine->counts().parsed.load(), requests.size());
  EXPECT_EQ(mine->counts().prepared.load(), requests.size());
  EXPECT_EQ(mine->counts().released.load(), requests.size());
}

TEST(WireIdentity, BadStrategyOptionsAreNamed) {
  WireServiceImpl service;
  auto start_error = [&](const ServerOptions& options) {
    Server server;
    EXPECT_EQ(0, server.AddService(&service, SERVER_DOESNT_OWN_SERVICE));
    EXPECT_EQ(-1, server.Start("127.0.0.1:0", options));
    return server.last_error();
  };
  ServerOptions null_strategy;
  null_strategy.method_memory_strategy["arenarpc.wire.WireService.Call"] = nullptr;
  EXPECT_NE(start_error(null_strategy).find("method_memory_strategy[arenarpc.wire.WireService.Call]"
                                            " is null"),
            std::string::npos)
      << start_error(null_strategy);
  ServerOptions unknown;
  unknown.method_memory_strategy["arenarpc.wire.WireService.Nope"] = memory::MakeMessageMemory("heap");
  EXPECT_NE(start_error(unknown).find("method_memory_strategy: no method "
                                      "'arenarpc.wire.WireService.Nope'"),
            std::string::npos)
      << start_error(unknown);
  ServerOptions both;
  both.method_memory_mode["arenarpc.wire.WireService.Call"] = "heap";
  both.method_memory_strategy["arenarpc.wire.WireService.Call"] = memory::MakeMessageMemory("heap");
  EXPECT_NE(start_error(both).find("are both set"), std::string::npos) << start_error(both);
}

}  // namespace
}  // namespace arenarpc::wire
