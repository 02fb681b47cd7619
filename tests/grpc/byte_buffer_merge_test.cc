// MergeFromByteBuffer: gRPC payload -> message with merge semantics (no Clear()), so that a reuse
// strategy request keeps its sub-message tree; plain, multi-slice and compressed buffers; errors.
#include <gtest/gtest.h>
#include <grpc/byte_buffer.h>
#include <grpc/slice.h>

#include <string>
#include <vector>

#include "arenarpc/grpc/byte_buffer_merge.h"
#include "arenarpc/grpc/message_allocator.h"
#include "echo/payload_generator.h"
#include "grpc_echo/echo_service.h"

namespace arenarpc::grpc {
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

std::string DrawRequestBytes(int scale, uint64_t seed, EchoRequest* out) {
  example::PayloadGenerator generator(scale, seed);
  generator.Fill(out);
  out->add_message("hello");
  return out->SerializeAsString();
}

TEST(ByteBufferMerge, ParsesPlainBuffersWhateverTheSlicing) {
  EchoRequest expected;
  const std::string bytes = DrawRequestBytes(4, 7, &expected);
  ASSERT_GT(bytes.size(), 1000u);
  for (size_t slice : {size_t{1}, size_t{7}, size_t{256}, size_t{4096}, bytes.size()}) {
    EchoRequest got;
    const ::grpc::Status status = MergeFromByteBuffer(MakeBuffer(bytes, slice), got);
    ASSERT_TRUE(status.ok()) << slice << ": " << status.error_message();
    EXPECT_EQ(got.SerializeAsString(), bytes) << "slice size " << slice;
  }
}

TEST(ByteBufferMerge, MergesInsteadOfClearing) {
  EchoRequest got;
  got.add_message("kept");
  EchoRequest part;
  part.add_message("added");
  ASSERT_TRUE(MergeFromByteBuffer(MakeBuffer(part.SerializeAsString(), 3), got).ok());
  ASSERT_EQ(got.message_size(), 2);
  EXPECT_EQ(got.message(0), "kept");
  EXPECT_EQ(got.message(1), "added");
}

TEST(ByteBufferMerge, ErrorsAreInternalLikeGrpcs) {
  EchoRequest got;
  ::grpc::Status status = MergeFromByteBuffer(nullptr, got);
  EXPECT_EQ(status.error_code(), ::grpc::StatusCode::INTERNAL);
  // Field 2 (payload) declared length-delimited with a length past the end.
  status = MergeFromByteBuffer(MakeBuffer(std::string("\x12\x7f\x01\x02", 4), 2), got);
  EXPECT_EQ(status.error_code(), ::grpc::StatusCode::INTERNAL);
  EXPECT_NE(status.error_message().find("EchoRequest"), std::string::npos)
      << status.error_message();
  // An empty buffer is a valid, empty message.
  EchoRequest empty;
  EXPECT_TRUE(MergeFromByteBuffer(MakeBuffer("", 1), empty).ok());
  EXPECT_EQ(empty.ByteSizeLong(), 0u);
}

// The point of merge-parse: a reuse-strategy request keeps its tree across calls (gRPC's own
// ParseFromZeroCopyStream would delete `payload` in Clear() and rebuild it every call).
TEST(ByteBufferMerge, ReuseRequestKeepsItsSubMessageTree) {
  auto alloc = allocator<EchoRequest, EchoResponse>("reuse");
  EchoRequest first;
  const std::string bytes = DrawRequestBytes(3, 5, &first);
  const example::ComplexPayload* kept = nullptr;
  for (int call = 0; call < 5; ++call) {
    auto* holder = alloc->Allocate();
    ASSERT_TRUE(MergeFromByteBuffer(MakeBuffer(bytes, 512), *holder->request()).ok());
    holder->SettleRequest();
    EXPECT_EQ(holder->request()->SerializeAsString(), bytes);
    if (kept == nullptr) kept = &holder->request()->payload();
    // Sequential calls get the pooled object back, with the same payload sub-message.
    EXPECT_EQ(&holder->request()->payload(), kept) << "call " << call;
    holder->Release();
  }
  EXPECT_GE(alloc->memory_stats().reuses, 4u);
}

}  // namespace
}  // namespace arenarpc::grpc
