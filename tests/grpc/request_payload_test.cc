// ParseRequestPayload: gRPC payload -> a call's request through its strategy
// (MessagePair::ParseRequest), so that a reuse-strategy request keeps its sub-message tree;
// plain and multi-slice buffers; errors.
#include <gtest/gtest.h>
#include <grpc/byte_buffer.h>
#include <grpc/slice.h>

#include <string>
#include <vector>

#include "arenarpc/grpc_memory/request_payload.h"
#include "arenarpc/grpc_memory/message_allocator.h"
#include "echo/payload_generator.h"
#include "grpc_echo/echo_service.h"

namespace arenarpc::grpc_memory {
namespace {

using example::EchoRequest;
using example::EchoResponse;

// A raw byte buffer holding `bytes` cut into slices of at most `slice_size` bytes.
grpc_byte_buffer* MakeBuffer(const std::string& bytes, size_t slice_size) {
  std::vector<grpc_slice> slices;
  for (size_t at = 0; at < bytes.size(); at += slice_size) {
    const size_t n = std::min(slice_size, bytes.size() - at);
    slices.push_back(grpc_slice_from_copied_buffer(bytes.data() + at, n));
  }
  grpc_byte_buffer* buffer = grpc_raw_byte_buffer_create(slices.data(), slices.size());
  for (grpc_slice& slice : slices) grpc_slice_unref(slice);
  return buffer;
}

// Parses `buffer` into a fresh pair of `memory` and returns the status; *out gets the request.
::grpc::Status ParseInto(memory::MessageMemory& memory, grpc_byte_buffer* buffer,
                         EchoRequest* out) {
  auto method = memory.Bind(EchoRequest::default_instance(), EchoResponse::default_instance());
  memory::MessagePair pair = method->Acquire();
  ::grpc::Status status = ParseRequestPayload(buffer, pair);
  if (status.ok()) out->CopyFrom(*pair.request());
  return status;
}

std::string DrawRequestBytes(int scale, uint64_t seed, EchoRequest* out) {
  example::PayloadGenerator generator(scale, seed);
  generator.Fill(out);
  out->add_message("hello");
  return out->SerializeAsString();
}

TEST(RequestPayload, ParsesPlainBuffersWhateverTheSlicingInEveryStrategy) {
  EchoRequest expected;
  const std::string bytes = DrawRequestBytes(4, 7, &expected);
  ASSERT_GT(bytes.size(), 1000u);
  for (const char* mode : {"heap", "arena", "paged", "reuse"}) {
    auto strategy = MakeStrategy(mode, {}, nullptr);
    for (size_t slice : {size_t{1}, size_t{7}, size_t{256}, size_t{4096}, bytes.size()}) {
      EchoRequest got;
      const ::grpc::Status status = ParseInto(*strategy, MakeBuffer(bytes, slice), &got);
      ASSERT_TRUE(status.ok()) << mode << " " << slice << ": " << status.error_message();
      EXPECT_EQ(got.SerializeAsString(), bytes) << mode << " slice size " << slice;
    }
  }
}

TEST(RequestPayload, ErrorsAreInternalLikeGrpcs) {
  auto strategy = MakeStrategy("reuse", {}, nullptr);
  EchoRequest got;
  auto method = strategy->Bind(EchoRequest::default_instance(), EchoResponse::default_instance());
  memory::MessagePair pair = method->Acquire();
  ::grpc::Status status = ParseRequestPayload(nullptr, pair);
  EXPECT_EQ(status.error_code(), ::grpc::StatusCode::INTERNAL);
  EXPECT_EQ(status.error_message(), "No payload");
  // Field 2 (payload) declared length-delimited with a length past the end.
  status = ParseInto(*strategy, MakeBuffer(std::string("\x12\x7f\x01\x02", 4), 2), &got);
  EXPECT_EQ(status.error_code(), ::grpc::StatusCode::INTERNAL);
  EXPECT_EQ(status.error_message(), "Failed to parse arenarpc.example.EchoRequest");
  // An empty buffer is a valid, empty message.
  EchoRequest empty;
  EXPECT_TRUE(ParseInto(*strategy, MakeBuffer("", 1), &empty).ok());
  EXPECT_EQ(empty.ByteSizeLong(), 0u);
}

// The point of merge-parse: a reuse-strategy request keeps its tree across calls (gRPC's own
// ParseFromZeroCopyStream would delete `payload` in Clear() and rebuild it every call).
TEST(RequestPayload, ReuseRequestKeepsItsSubMessageTree) {
  auto strategy = MakeStrategy("reuse", {}, nullptr);
  auto method = strategy->Bind(EchoRequest::default_instance(), EchoResponse::default_instance());
  EchoRequest first;
  const std::string bytes = DrawRequestBytes(3, 5, &first);
  const example::ComplexPayload* kept = nullptr;
  for (int call = 0; call < 5; ++call) {
    memory::MessagePair pair = method->Acquire();
    ASSERT_TRUE(ParseRequestPayload(MakeBuffer(bytes, 512), pair).ok());
    const auto& request = static_cast<const EchoRequest&>(*pair.request());
    EXPECT_EQ(request.SerializeAsString(), bytes);
    if (kept == nullptr) kept = &request.payload();
    // Sequential calls get the pooled object back, with the same payload sub-message.
    EXPECT_EQ(&request.payload(), kept) << "call " << call;
  }
  EXPECT_GE(strategy->stats().reuses, 4u);
}

}  // namespace
}  // namespace arenarpc::grpc_memory
