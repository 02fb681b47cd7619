#include "protocol/frame_codec.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace arenarpc::protocol {
namespace {

uint32_t LoadBE32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

void StoreBE32(char* p, uint32_t v) {
  p[0] = static_cast<char>(v >> 24);
  p[1] = static_cast<char>(v >> 16);
  p[2] = static_cast<char>(v >> 8);
  p[3] = static_cast<char>(v);
}

std::string HexPrefix(const unsigned char* p, size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) s += ' ';
    s += kHex[p[i] >> 4];
    s += kHex[p[i] & 15];
  }
  return s;
}

}  // namespace

FrameDecoder::FrameDecoder(size_t max_body_size) : max_body_size_(max_body_size) {}

DecodeStatus FrameDecoder::Next(net::BufferChain& in, Frame* out, bool report_heads) {
  if (failed_) return DecodeStatus::kError;
  if (head_body_size_ > 0) {  // the head was reported and its meta parsed: wait for the body
    if (in.size() - kHeaderSize < head_body_size_) return DecodeStatus::kNeedMore;
    head_body_size_ = 0;
    in.PopFront(kHeaderSize + out->meta_size);
    CutData(in, out);
    return DecodeStatus::kFrame;
  }
  attachment_error_ = false;

  unsigned char header[kHeaderSize];
  const size_t have = in.CopyTo(header, kHeaderSize);
  const size_t magic_bytes = have < 4 ? have : 4;
  if (std::memcmp(header, kRpcFrameMagic, magic_bytes) != 0) {
    if (magic_bytes == 4 && std::memcmp(header, kStreamFrameMagic, 4) == 0) {
      return Fail("streaming frame (magic \"STRM\") received: streaming RPC is not supported");
    }
    return Fail("bad magic " + HexPrefix(header, magic_bytes) + " (expected 50 52 50 43 \"PRPC\")");
  }
  if (have < kHeaderSize) return DecodeStatus::kNeedMore;

  const size_t body_size = LoadBE32(header + 4);
  const size_t meta_size = LoadBE32(header + 8);
  if (body_size > max_body_size_) {
    return Fail("body_size=" + std::to_string(body_size) +
                " is larger than max_body_size=" + std::to_string(max_body_size_));
  }
  if (meta_size > body_size) {
    return Fail("meta_size=" + std::to_string(meta_size) +
                " is larger than body_size=" + std::to_string(body_size));
  }
  if (meta_size > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return Fail("meta_size=" + std::to_string(meta_size) + " is larger than protobuf can parse");
  }
  if (in.size() - kHeaderSize < body_size) {
    if (!report_heads || body_size < kHeadFirstBodySize ||
        in.size() - kHeaderSize < meta_size) {
      return DecodeStatus::kNeedMore;
    }
    const DecodeStatus parsed = ParseMeta(in, body_size, meta_size, out);
    if (parsed != DecodeStatus::kFrame) return parsed;
    head_body_size_ = body_size;
    return DecodeStatus::kHead;
  }
  const DecodeStatus parsed = ParseMeta(in, body_size, meta_size, out);
  if (parsed != DecodeStatus::kFrame) return parsed;
  in.PopFront(kHeaderSize + meta_size);
  CutData(in, out);
  return DecodeStatus::kFrame;
}

// Parses the meta that follows the 12-byte header at the front of `in` (consumes nothing) and
// checks that the attachment fits the body after it.
DecodeStatus FrameDecoder::ParseMeta(net::BufferChain& in, size_t body_size, size_t meta_size,
                                     Frame* out) {
  out->meta.Clear();
  out->payload.clear();
  out->attachment.clear();
  out->meta_size = meta_size;
  out->body_size = body_size;
  {
    net::BufferChainInputStream meta_stream(in, kHeaderSize + meta_size);
    if (!meta_stream.Skip(static_cast<int>(kHeaderSize)) ||
        !out->meta.MergePartialFromBoundedZeroCopyStream(&meta_stream,
                                                         static_cast<int>(meta_size))) {
      return Fail("fail to parse RpcMeta (" + std::to_string(meta_size) + " bytes)");
    }
    if (!out->meta.IsInitialized()) {
      return Fail("RpcMeta lacks required fields: " + out->meta.InitializationErrorString());
    }
  }
  // Not a framing error: the frame is intact, only its split is impossible (spec §1.1).
  attachment_error_ = out->meta.attachment_size() > 0 &&
                      static_cast<size_t>(out->meta.attachment_size()) > body_size - meta_size;
  return DecodeStatus::kFrame;
}

DecodeStatus FrameDecoder::Fail(std::string message) {
  failed_ = true;
  error_ = std::move(message);
  return DecodeStatus::kError;
}

void FrameDecoder::CutData(net::BufferChain& in, Frame* out) {
  const size_t rest = out->body_size - out->meta_size;
  const size_t attachment_size =
      attachment_error_ ? 0 : static_cast<size_t>(std::max(out->meta.attachment_size(), 0));
  in.CutFront(rest - attachment_size, &out->payload);
  in.CutFront(attachment_size, &out->attachment);
}

size_t FrameDecoder::Drop(net::BufferChain& in) {
  const size_t frame_size = kHeaderSize + std::exchange(head_body_size_, 0);
  const size_t have = std::min(in.size(), frame_size);
  in.PopFront(have);
  return frame_size - have;
}

size_t FrameDecoder::missing(const net::BufferChain& in) const noexcept {
  if (failed_) return 0;
  size_t body_size = head_body_size_;
  if (body_size == 0) {
    unsigned char header[kHeaderSize];
    if (in.CopyTo(header, kHeaderSize) < kHeaderSize) return 0;
    body_size = LoadBE32(header + 4);
  }
  if (body_size < kHeadFirstBodySize) return 0;
  const size_t frame_size = kHeaderSize + body_size;
  return frame_size > in.size() ? frame_size - in.size() : 0;
}

void EncodeHeaderAndMeta(std::string_view magic, const google::protobuf::MessageLite& meta,
                         size_t data_size, net::BufferChain* out) {
  const size_t meta_size = meta.ByteSizeLong();
  const size_t body_size = meta_size + data_size;
  if (body_size > std::numeric_limits<uint32_t>::max()) {
    throw std::length_error("frame body of " + std::to_string(body_size) +
                            " bytes does not fit baidu_std's 32-bit body_size");
  }
  std::span<char> space = out->PrepareWrite(kHeaderSize + meta_size);
  char* p = space.data();
  std::memcpy(p, magic.data(), 4);
  StoreBE32(p + 4, static_cast<uint32_t>(body_size));
  StoreBE32(p + 8, static_cast<uint32_t>(meta_size));
  meta.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(p + kHeaderSize));
  out->CommitWrite(kHeaderSize + meta_size);
}

void DecodeHeaderSizes(const unsigned char* header, size_t* body_size, size_t* meta_size) {
  *body_size = LoadBE32(header + 4);
  *meta_size = LoadBE32(header + 8);
}

void EncodeFrame(const RpcMeta& meta, net::BufferChain&& payload, net::BufferChain&& attachment,
                 net::BufferChain* out) {
  EncodeHeaderAndMeta(std::string_view(kRpcFrameMagic, 4), meta,
                      payload.size() + attachment.size(), out);
  out->Append(std::move(payload));
  out->Append(std::move(attachment));
}

}  // namespace arenarpc::protocol
