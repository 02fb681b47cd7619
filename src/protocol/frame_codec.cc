#include "protocol/frame_codec.h"

#include <cstring>
#include <limits>
#include <stdexcept>
#include <string_view>

namespace arenarpc::protocol {
namespace {

constexpr char kMagic[4] = {'P', 'R', 'P', 'C'};
constexpr char kStreamMagic[4] = {'S', 'T', 'R', 'M'};

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

DecodeStatus FrameDecoder::Next(net::BufferChain& in, Frame* out) {
  if (failed_) return DecodeStatus::kError;
  attachment_error_ = false;
  auto fail = [this](std::string message) {
    failed_ = true;
    error_ = std::move(message);
    return DecodeStatus::kError;
  };

  unsigned char header[kHeaderSize];
  const size_t have = in.CopyTo(header, kHeaderSize);
  const size_t magic_bytes = have < 4 ? have : 4;
  if (std::memcmp(header, kMagic, magic_bytes) != 0) {
    if (magic_bytes == 4 && std::memcmp(header, kStreamMagic, 4) == 0) {
      return fail("streaming frame (magic \"STRM\") received: streaming RPC is not supported");
    }
    return fail("bad magic " + HexPrefix(header, magic_bytes) + " (expected 50 52 50 43 \"PRPC\")");
  }
  if (have < kHeaderSize) return DecodeStatus::kNeedMore;

  const size_t body_size = LoadBE32(header + 4);
  const size_t meta_size = LoadBE32(header + 8);
  if (body_size > max_body_size_) {
    return fail("body_size=" + std::to_string(body_size) +
                " is larger than max_body_size=" + std::to_string(max_body_size_));
  }
  if (meta_size > body_size) {
    return fail("meta_size=" + std::to_string(meta_size) +
                " is larger than body_size=" + std::to_string(body_size));
  }
  if (meta_size > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return fail("meta_size=" + std::to_string(meta_size) + " is larger than protobuf can parse");
  }
  if (in.size() - kHeaderSize < body_size) return DecodeStatus::kNeedMore;

  in.PopFront(kHeaderSize);
  out->meta.Clear();
  out->payload.clear();
  out->attachment.clear();
  out->meta_size = meta_size;
  {
    net::BufferChainInputStream meta_stream(in, meta_size);
    if (!out->meta.MergePartialFromBoundedZeroCopyStream(&meta_stream,
                                                         static_cast<int>(meta_size))) {
      return fail("fail to parse RpcMeta (" + std::to_string(meta_size) + " bytes)");
    }
    if (!out->meta.IsInitialized()) {
      return fail("RpcMeta lacks required fields: " + out->meta.InitializationErrorString());
    }
  }
  in.PopFront(meta_size);

  const size_t rest = body_size - meta_size;
  size_t attachment_size = 0;
  if (out->meta.attachment_size() > 0) {
    attachment_size = static_cast<size_t>(out->meta.attachment_size());
    if (attachment_size > rest) {
      // Not a framing error: the frame is intact, only its split is impossible (spec §1.1).
      attachment_error_ = true;
      attachment_size = 0;
    }
  }
  in.CutFront(rest - attachment_size, &out->payload);
  in.CutFront(attachment_size, &out->attachment);
  return DecodeStatus::kFrame;
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
  EncodeHeaderAndMeta(std::string_view(kMagic, 4), meta, payload.size() + attachment.size(), out);
  out->Append(std::move(payload));
  out->Append(std::move(attachment));
}

}  // namespace arenarpc::protocol
