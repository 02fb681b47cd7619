// baidu_std runtime: the same handler and request sequence in every memory strategy (by name and
// as a strategy object) gives reply frames whose bytes, read off the socket, equal heap's, call by
// call: meta, payload and attachment.
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
#include "protocol/rpc_meta.pb.h"
#include "raw_client.h"
#include "wire_handler.h"
#include "wire_service.pb.h"

namespace arenarpc::wire {
namespace {

constexpr int kCalls = 300;  // enough for pooled objects to meet many smaller requests

class WireServiceImpl final : public WireService {
 public:
  void Call(google::protobuf::RpcController* controller, const WireRequest* request,
            WireReply* reply, google::protobuf::Closure* done) override {
    Answer(*request, reply);
    auto* cntl = static_cast<Controller*>(controller);
    if (!cntl->request_attachment().empty()) {  // the attachment goes back, with a suffix
      cntl->response_attachment().Append(cntl->request_attachment().ToString() + "|back");
    }
    done->Run();
  }
};

// One reply frame as it crossed the socket, cut into its three parts.
struct ReplyFrame {
  std::string meta, payload, attachment;
};

ReplyFrame Cut(const std::string& frame) {
  ReplyFrame cut;
  if (frame.size() < 12) {
    ADD_FAILURE() << "short frame";
    return cut;
  }
  auto be32 = [&](size_t at) {
    return (uint32_t{static_cast<unsigned char>(frame[at])} << 24) |
           (uint32_t{static_cast<unsigned char>(frame[at + 1])} << 16) |
           (uint32_t{static_cast<unsigned char>(frame[at + 2])} << 8) |
           uint32_t{static_cast<unsigned char>(frame[at + 3])};
  };
  const size_t meta_size = be32(8);
  cut.meta = frame.substr(12, meta_size);
  protocol::RpcMeta meta;
  EXPECT_TRUE(meta.ParseFromString(cut.meta));
  const size_t attachment_size = static_cast<size_t>(meta.attachment_size());
  const std::string rest = frame.substr(12 + meta_size);
  EXPECT_LE(attachment_size, rest.size());
  cut.payload = rest.substr(0, rest.size() - attachment_size);
  cut.attachment = rest.substr(rest.size() - attachment_size);
  return cut;
}

std::string AttachmentFor(size_t i) {
  return i % 3 == 0 ? std::string() : std::string(i % 50, static_cast<char>('a' + i % 26));
}

// Serves `requests` one by one with `options` on one connection and returns each reply frame as
// read from the socket.
std::vector<ReplyFrame> Replies(ServerOptions options, const std::vector<WireRequest>& requests) {
  WireServiceImpl service;
  Server server;
  EXPECT_EQ(0, server.AddService(&service, SERVER_DOESNT_OWN_SERVICE)) << server.last_error();
  options.num_threads = 1;
  EXPECT_EQ(0, server.Start("127.0.0.1:0", options)) << server.last_error();
  e2e::RawClient client(server.listen_port());
  EXPECT_TRUE(client.connected());
  std::vector<ReplyFrame> replies;
  for (size_t i = 0; i < requests.size(); ++i) {
    e2e::RawRequest raw = e2e::RequestFor(&requests[i]);
    raw.service = "arenarpc.wire.WireService";
    raw.method = "Call";
    raw.attachment = AttachmentFor(i);
    client.Send(raw);
    std::string frame;
    if (!client.ReadFrameBytes(&frame)) {
      ADD_FAILURE() << "no reply frame to request " << i;
      break;
    }
    replies.push_back(Cut(frame));
  }
  client.Close();
  server.Stop();
  server.Join();
  return replies;
}

// Heap's frames, checked once for what they must cover: every reply succeeded, attachments came
// back, maps with several entries and unknown fields are among the payloads.
void CheckCoverage(const std::vector<ReplyFrame>& heap, size_t requests) {
  ASSERT_EQ(requests, heap.size());
  int multi_entry_maps = 0, unknown_fields = 0, attachments = 0;
  for (size_t i = 0; i < heap.size(); ++i) {
    protocol::RpcMeta meta;
    ASSERT_TRUE(meta.ParseFromString(heap[i].meta));
    ASSERT_EQ(0, meta.response().error_code()) << meta.response().error_text();
    EXPECT_EQ(AttachmentFor(i).empty() ? "" : AttachmentFor(i) + "|back", heap[i].attachment);
    attachments += !heap[i].attachment.empty();
    multi_entry_maps += MultiEntryMaps(heap[i].payload, *WireReply::descriptor());
    WireReply reply;
    ASSERT_TRUE(reply.ParseFromString(heap[i].payload));
    unknown_fields += reply.node().GetReflection()->GetUnknownFields(reply.node()).field_count();
  }
  EXPECT_GT(multi_entry_maps, 10);
  EXPECT_GT(unknown_fields, 10);
  EXPECT_GT(attachments, 10);
}

// Meta and attachment byte for byte; the payload byte for byte up to the order of map entries
// (see SortMapEntries), and byte for byte outright when no map holds two entries.
void ExpectSameBytes(const std::vector<ReplyFrame>& expected, const std::vector<ReplyFrame>& got,
                     const std::string& what) {
  ASSERT_EQ(expected.size(), got.size()) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(expected[i].meta, got[i].meta) << what << ": reply " << i << "'s meta";
    ASSERT_EQ(expected[i].attachment, got[i].attachment) << what << ": reply " << i;
    ASSERT_EQ(expected[i].payload.size(), got[i].payload.size()) << what << ": reply " << i;
    if (MultiEntryMaps(expected[i].payload, *WireReply::descriptor()) == 0) {
      ASSERT_EQ(expected[i].payload, got[i].payload) << what << ": reply " << i;
    } else {
      const std::string sorted = SortMapEntries(expected[i].payload, *WireReply::descriptor());
      ASSERT_FALSE(sorted.empty());
      ASSERT_EQ(sorted, SortMapEntries(got[i].payload, *WireReply::descriptor()))
          << what << ": reply " << i;
    }
  }
}

TEST(WireIdentity, EveryStrategyRepliesWithHeapsBytes) {
  const std::vector<WireRequest> requests = RequestSequence(kCalls);
  ServerOptions heap;
  heap.memory_mode = "heap";
  const std::vector<ReplyFrame> expected = Replies(heap, requests);
  CheckCoverage(expected, requests.size());
  for (const char* mode : {"arena", "paged", "reuse", "auto"}) {
    ServerOptions options;
    options.memory_mode = mode;
    ExpectSameBytes(expected, Replies(options, requests), mode);
  }
  // reuse with every call pooled, with its default size switch, and with every call after the
  // first few on its paged arena.
  const size_t n = requests.size();
  for (const size_t min_call_bytes :
       {size_t{0}, memory::ReuseSettings{}.min_call_bytes, size_t{1} << 30}) {
    memory::MemoryOptions memory_options;
    memory_options.reuse.min_call_bytes = min_call_bytes;
    auto reuse = memory::MakeMessageMemory("reuse", memory_options, nullptr);
    ServerOptions options;
    options.memory_strategy = reuse;
    const std::string what = "reuse, min_call_bytes " + std::to_string(min_call_bytes);
    ExpectSameBytes(expected, Replies(options, requests), what);
    const memory::MemoryStats stats = reuse->stats();
    EXPECT_EQ(stats.acquired, n) << what;
    if (min_call_bytes == 0) {
      EXPECT_EQ(stats.calls_on_arena, 0u) << what;
      EXPECT_GT(stats.reuses, n / 2) << what;
    } else if (min_call_bytes == (size_t{1} << 30)) {
      EXPECT_GT(stats.calls_on_arena, n / 2) << what;
    }
  }
}

// "auto" with trials so short that the method moves between strategies all along the sequence:
// whichever strategy serves a call, and whatever an earlier one left in the pools, the bytes are
// heap's.
TEST(WireIdentity, AutoRepliesWithHeapsBytesWhileItSwitches) {
  const std::vector<WireRequest> requests = RequestSequence(kCalls);
  ServerOptions heap;
  const std::vector<ReplyFrame> expected = Replies(heap, requests);
  memory::MemoryOptions memory_options;
  memory_options.automatic.warmup_calls = 1;
  memory_options.automatic.trial_calls = 2;
  memory_options.automatic.trial_block = 1;
  memory_options.automatic.sample_every = 1;
  memory_options.automatic.recheck_calls = 5;
  memory_options.automatic.switch_margin = 0;
  auto automatic = memory::MakeMessageMemory("auto", memory_options, nullptr);
  ServerOptions options;
  options.memory_strategy = automatic;
  ExpectSameBytes(expected, Replies(options, requests), "auto, switching");
  const memory::MemoryStats stats = automatic->stats();
  EXPECT_EQ(stats.acquired, requests.size());
  EXPECT_EQ(stats.released, requests.size());
  EXPECT_GT(stats.reuses, 0u);           // reuse served some calls
  EXPECT_GT(stats.page_allocations, 0u);  // and paged others
}

TEST(WireIdentity, SortMapEntriesOnlyReordersMapEntries) {
  WireReply reply;
  (*reply.mutable_node()->mutable_counts())["a"] = 1;
  (*reply.mutable_node()->mutable_counts())["b"] = 2;
  reply.mutable_node()->set_one_text("t");
  const std::string bytes = reply.SerializeAsString();
  EXPECT_EQ(1, MultiEntryMaps(bytes, *WireReply::descriptor()));
  const std::string sorted = SortMapEntries(bytes, *WireReply::descriptor());
  EXPECT_EQ(bytes.size(), sorted.size());
  WireReply back;
  ASSERT_TRUE(back.ParseFromString(sorted));
  EXPECT_EQ(reply.DebugString(), back.DebugString());
  WireReply other = reply;  // a different value is not hidden by the sorting
  (*other.mutable_node()->mutable_counts())["b"] = 3;
  EXPECT_NE(sorted, SortMapEntries(other.SerializeAsString(), *WireReply::descriptor()));
  EXPECT_TRUE(SortMapEntries("\xff", *WireReply::descriptor()).empty());  // not well-formed
}

TEST(WireIdentity, StrategyObjectsServeLikeTheirNames) {
  const std::vector<WireRequest> requests = RequestSequence(kCalls / 3);
  ServerOptions heap;
  const std::vector<ReplyFrame> expected = Replies(heap, requests);
  auto reuse = memory::MakeMessageMemory(memory::MemoryMode::kReuse);
  ServerOptions server_wide;
  server_wide.memory_strategy = reuse;
  ExpectSameBytes(expected, Replies(server_wide, requests), "memory_strategy");
  EXPECT_EQ(reuse->stats().acquired, requests.size());
  EXPECT_EQ(reuse->stats().released, requests.size());

  auto paged = memory::MakeMessageMemory(memory::MemoryMode::kPaged);
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
  const std::vector<ReplyFrame> expected = Replies(ServerOptions(), requests);
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
  unknown.method_memory_strategy["arenarpc.wire.WireService.Nope"] =
      memory::MakeMessageMemory(memory::MemoryMode::kHeap);
  EXPECT_NE(start_error(unknown).find("method_memory_strategy: no method "
                                      "'arenarpc.wire.WireService.Nope'"),
            std::string::npos)
      << start_error(unknown);
  ServerOptions both;
  both.method_memory_mode["arenarpc.wire.WireService.Call"] = "heap";
  both.method_memory_strategy["arenarpc.wire.WireService.Call"] =
      memory::MakeMessageMemory(memory::MemoryMode::kHeap);
  EXPECT_NE(start_error(both).find("are both set"), std::string::npos) << start_error(both);
}

}  // namespace
}  // namespace arenarpc::wire
