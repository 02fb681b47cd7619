#include "protocol/stream_frame.h"

#include <cstdint>
#include <cstring>
#include <string_view>

namespace arenarpc::protocol {

FrameKind PeekFrameKind(const net::BufferChain& input) {
  char head[4];
  const size_t n = input.CopyTo(head, sizeof(head));
  if (n == 4) {  // every frame of a call passes here: compare words, not bytes
    uint32_t word, rpc, stream;
    std::memcpy(&word, head, 4);
    std::memcpy(&rpc, kRpcFrameMagic, 4);
    std::memcpy(&stream, kStreamFrameMagic, 4);
    if (word == rpc) return FrameKind::kRpc;
    return word == stream ? FrameKind::kStream : FrameKind::kOther;
  }
  const bool prefix =
      std::memcmp(head, kRpcFrameMagic, n) == 0 || std::memcmp(head, kStreamFrameMagic, n) == 0;
  return prefix ? FrameKind::kNeedMore : FrameKind::kOther;
}

StreamFrameDecoder::StreamFrameDecoder(size_t max_body_size) : max_body_size_(max_body_size) {}

DecodeStatus StreamFrameDecoder::Next(net::BufferChain& in, StreamFrame* out) {
  if (failed_) return DecodeStatus::kError;
  auto fail = [this](std::string message) {
    failed_ = true;
    error_ = std::move(message);
    return DecodeStatus::kError;
  };
  unsigned char header[kHeaderSize];
  if (in.CopyTo(header, kHeaderSize) < kHeaderSize) return DecodeStatus::kNeedMore;
  if (std::memcmp(header, kStreamFrameMagic, 4) != 0) return fail("not a \"STRM\" frame");
  size_t body_size = 0, meta_size = 0;
  DecodeHeaderSizes(header, &body_size, &meta_size);
  if (body_size > max_body_size_) {
    return fail("stream frame body_size=" + std::to_string(body_size) +
                " is larger than max_body_size=" + std::to_string(max_body_size_));
  }
  if (meta_size > body_size) {
    return fail("stream frame meta_size=" + std::to_string(meta_size) +
                " is larger than body_size=" + std::to_string(body_size));
  }
  if (in.size() - kHeaderSize < body_size) return DecodeStatus::kNeedMore;
  in.PopFront(kHeaderSize);
  out->meta.Clear();
  out->data.clear();
  {
    net::BufferChainInputStream meta_stream(in, meta_size);
    if (!out->meta.MergePartialFromBoundedZeroCopyStream(&meta_stream,
                                                         static_cast<int>(meta_size)) ||
        !out->meta.IsInitialized()) {
      return fail("fail to parse StreamFrameMeta (" + std::to_string(meta_size) + " bytes)");
    }
  }
  in.PopFront(meta_size);
  in.CutFront(body_size - meta_size, &out->data);
  return DecodeStatus::kFrame;
}

void EncodeStreamFrame(const StreamFrameMeta& meta, net::BufferChain&& data,
                       net::BufferChain* out) {
  EncodeHeaderAndMeta(std::string_view(kStreamFrameMagic, 4), meta, data.size(), out);
  out->Append(std::move(data));
}

}  // namespace arenarpc::protocol
