// gRPC adapter: the same handler and request sequence served through ServiceMemory::Serve and
// through the generated allocator setter, in every strategy, gives replies whose bytes (as received
// by the client, unparsed) equal gRPC's default allocation's, call by call. The handler never calls anything memory-specific.
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/client_unary_call.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "arenarpc/grpc_memory/service_memory.h"
#include "wire_grpc.grpc.pb.h"
#include "wire_handler.h"

namespace arenarpc::wire {
namespace {

constexpr int kCalls = 300;
constexpr const char* kCall = "arenarpc.wire.WireGrpc.Call";

class WireGrpcImpl final : public WireGrpc::CallbackService {
 public:
  WireGrpcImpl() { WireGrpcLink().CheckInitialized(); }  // links wire_grpc.pb.cc (see the .proto)
  ::grpc::ServerUnaryReactor* Call(::grpc::CallbackServerContext* context,
                                   const WireRequest* request, WireReply* reply) override {
    Answer(*request, reply);
    auto* reactor = context->DefaultReactor();
    reactor->Finish(::grpc::Status::OK);
    return reactor;
  }
};

// A server running `service` on 127.0.0.1 and a stub to it.
struct RunningServer {
  explicit RunningServer(WireGrpcImpl& service) {
    int port = 0;
    ::grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", ::grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
    EXPECT_NE(server, nullptr);
    channel = ::grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                    ::grpc::InsecureChannelCredentials());
  }
  ~RunningServer() {
    server->Shutdown();
    server->Wait();
  }
  // The reply message's bytes as the server sent them: the call is the generated stub's, with a
  // ByteBuffer where the stub would parse a WireReply.
  std::string Call(const WireRequest& request) {
    ::grpc::ClientContext context;
    ::grpc::ByteBuffer reply;
    const ::grpc::internal::RpcMethod method("/arenarpc.wire.WireGrpc/Call",
                                             ::grpc::internal::RpcMethod::NORMAL_RPC, channel);
    const ::grpc::Status status =
        ::grpc::internal::BlockingUnaryCall<WireRequest, ::grpc::ByteBuffer,
                                            ::grpc::protobuf::MessageLite, ::grpc::ByteBuffer>(
            channel.get(), method, &context, request, &reply);
    EXPECT_TRUE(status.ok()) << status.error_message();
    std::vector<::grpc::Slice> slices;
    EXPECT_TRUE(reply.Dump(&slices).ok());
    std::string bytes;
    for (const ::grpc::Slice& slice : slices) {
      bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
    }
    return bytes;
  }

  std::shared_ptr<::grpc::Channel> channel;
  std::unique_ptr<::grpc::Server> server;
};

// Serves `requests` one by one in `mode` through `path` ("serve" or "allocator") and returns each
// reply message's bytes as received.
std::vector<std::string> Replies(const std::string& mode, const std::string& path,
                                 const std::vector<WireRequest>& requests) {
  arenarpc::grpc_memory::ServiceMemory memory(mode);
  WireGrpcImpl service;
  std::string error;
  if (path == "serve") {
    EXPECT_EQ(0, memory.Serve(service, kCall, &WireGrpcImpl::Call, &error)) << error;
  } else {
    service.SetMessageAllocatorFor_Call(memory.allocator<WireRequest, WireReply>(&error));
    EXPECT_EQ(error, "");
  }
  std::vector<std::string> replies;
  {
    RunningServer running(service);
    for (const WireRequest& request : requests) replies.push_back(running.Call(request));
  }
  const arenarpc::grpc_memory::HolderStats holders = memory.holder_stats();
  EXPECT_EQ(holders.allocated, holders.released) << mode << " " << path;
  if (!memory.is_default()) {
    EXPECT_EQ(holders.allocated, requests.size()) << mode << " " << path;
  }
  return replies;
}

// Byte for byte up to the order of map entries (see SortMapEntries), and byte for byte outright
// when no map holds two entries.
void ExpectSameBytes(const std::vector<std::string>& expected, const std::vector<std::string>& got,
                     const std::string& what) {
  ASSERT_EQ(expected.size(), got.size()) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(expected[i].size(), got[i].size()) << what << ": reply " << i;
    if (MultiEntryMaps(expected[i], *WireReply::descriptor()) == 0) {
      ASSERT_EQ(expected[i], got[i]) << what << ": reply " << i;
    } else {
      ASSERT_EQ(SortMapEntries(expected[i], *WireReply::descriptor()),
                SortMapEntries(got[i], *WireReply::descriptor()))
          << what << ": reply " << i;
    }
  }
}

TEST(GrpcWireIdentity, EveryStrategyAndPathRepliesWithDefaultsBytes) {
  const std::vector<WireRequest> requests = RequestSequence(kCalls);
  const std::vector<std::string> expected = Replies("default", "serve", requests);
  int multi_entry_maps = 0;
  for (const std::string& reply : expected) {
    multi_entry_maps += MultiEntryMaps(reply, *WireReply::descriptor());
  }
  EXPECT_GT(multi_entry_maps, 10);
  for (const char* mode : {"heap", "arena", "paged", "reuse", "auto"}) {
    for (const char* path : {"serve", "allocator"}) {
      const std::vector<std::string> got = Replies(mode, path, requests);
      ExpectSameBytes(expected, got, std::string(mode) + " " + path);
    }
  }
}

TEST(GrpcWireIdentity, PerMethodModeOnOneServiceMemory) {
  const std::vector<WireRequest> requests = RequestSequence(kCalls / 3);
  const std::vector<std::string> expected = Replies("default", "serve", requests);
  arenarpc::grpc_memory::ServiceMemory memory("heap");
  WireGrpcImpl service;
  std::string error;
  ASSERT_EQ(0, memory.Serve(service, kCall, &WireGrpcImpl::Call, "reuse", &error)) << error;
  {
    RunningServer running(service);
    std::vector<std::string> got;
    for (const WireRequest& request : requests) got.push_back(running.Call(request));
    ExpectSameBytes(expected, got, "per-method reuse");
  }
  EXPECT_EQ(memory.memory_stats("reuse").acquired, requests.size());
  EXPECT_GT(memory.memory_stats("reuse").reuses, 0u);
  EXPECT_EQ(memory.memory_stats().acquired, 0u);  // heap, the default, served nothing
}

}  // namespace
}  // namespace arenarpc::wire
