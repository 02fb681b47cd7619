// gRPC over HTTP/2 on the arenarpc port: the same handler and request sequence in every memory
// strategy gives replies whose message bytes, as Debian's gRPC C++ client receives them, equal
// heap's, call by call (as wire_identity_test checks baidu_std's frames).
#include <google/protobuf/stubs/callback.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/client_unary_call.h>
#include <grpcpp/impl/codegen/rpc_method.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "arenarpc/server.h"
#include "wire_handler.h"
#include "wire_service.pb.h"

namespace arenarpc::wire {
namespace {

constexpr int kCalls = 300;

class WireServiceImpl final : public WireService {
 public:
  void Call(google::protobuf::RpcController*, const WireRequest* request, WireReply* reply,
            google::protobuf::Closure* done) override {
    Answer(*request, reply);
    done->Run();
  }
};

std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

// Serves `requests` one by one over one gRPC channel and returns each reply message's bytes.
std::vector<std::string> Replies(ServerOptions options, const std::vector<WireRequest>& requests) {
  WireServiceImpl service;
  Server server;
  EXPECT_EQ(0, server.AddService(&service, SERVER_DOESNT_OWN_SERVICE)) << server.last_error();
  options.num_threads = 1;
  EXPECT_EQ(0, server.Start("127.0.0.1:0", options)) << server.last_error();
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(server.listen_port()),
                                     grpc::InsecureChannelCredentials());
  const grpc::internal::RpcMethod method("/arenarpc.wire.WireService/Call",
                                         grpc::internal::RpcMethod::NORMAL_RPC);
  std::vector<std::string> replies;
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::string bytes = requests[i].SerializeAsString();
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1), reply;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    const grpc::Status status = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
        channel.get(), method, &context, request, &reply);
    if (!status.ok()) {
      ADD_FAILURE() << "request " << i << ": " << status.error_code() << " "
                    << status.error_message();
      break;
    }
    replies.push_back(Flatten(reply));
  }
  server.Stop();
  server.Join();
  return replies;
}

TEST(H2GrpcWireIdentity, EveryStrategyRepliesWithHeapsBytes) {
  const std::vector<WireRequest> requests = RequestSequence(kCalls);
  ServerOptions heap;
  heap.memory_mode = "heap";
  const std::vector<std::string> expected = Replies(heap, requests);
  ASSERT_EQ(requests.size(), expected.size());
  int multi_entry_maps = 0;
  for (const std::string& payload : expected) {
    WireReply reply;
    ASSERT_TRUE(reply.ParseFromString(payload));
    multi_entry_maps += MultiEntryMaps(payload, *WireReply::descriptor());
  }
  EXPECT_GT(multi_entry_maps, 10);  // the comparison below meets map order
  for (const char* mode : {"arena", "paged", "reuse"}) {
    ServerOptions options;
    options.memory_mode = mode;
    const std::vector<std::string> got = Replies(options, requests);
    ASSERT_EQ(expected.size(), got.size()) << mode;
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_EQ(expected[i].size(), got[i].size()) << mode << ": reply " << i;
      if (MultiEntryMaps(expected[i], *WireReply::descriptor()) == 0) {
        ASSERT_EQ(expected[i], got[i]) << mode << ": reply " << i;
      } else {
        ASSERT_EQ(SortMapEntries(expected[i], *WireReply::descriptor()),
                  SortMapEntries(got[i], *WireReply::descriptor()))
            << mode << ": reply " << i;
      }
    }
  }
}

}  // namespace
}  // namespace arenarpc::wire
