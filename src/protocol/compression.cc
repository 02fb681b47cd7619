#include "protocol/compression.h"

#include <snappy-sinksource.h>
#include <snappy.h>
#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "protocol/rpc_meta.pb.h"

namespace arenarpc::protocol {
namespace {

// --- snappy adapters: read a chain span by span, write into the chain's own blocks.

class ChainSource final : public snappy::Source {
 public:
  explicit ChainSource(const net::BufferChain& chain) : chain_(chain), left_(chain.size()) {}
  size_t Available() const override { return left_; }
  const char* Peek(size_t* len) override {
    if (left_ == 0) {
      *len = 0;
      return nullptr;
    }
    const std::span<const char> s = chain_.span(index_);
    *len = s.size() - offset_;
    return s.data() + offset_;
  }
  void Skip(size_t n) override {
    left_ -= n;
    while (n > 0) {
      const size_t in_span = chain_.span(index_).size() - offset_;
      const size_t step = std::min(n, in_span);
      offset_ += step;
      n -= step;
      if (offset_ == chain_.span(index_).size()) {
        ++index_;
        offset_ = 0;
      }
    }
  }

 private:
  const net::BufferChain& chain_;
  size_t left_, index_ = 0, offset_ = 0;
};

class ChainSink final : public snappy::Sink {
 public:
  ChainSink(net::BufferChain* out, size_t max_output) : out_(out), max_output_(max_output) {}
  void Append(const char* bytes, size_t n) override {
    written_ += n;
    if (written_ > max_output_) return;  // reported by overflowed(); snappy has no error path here
    if (bytes == handed_out_ && n <= handed_size_) {
      out_->CommitWrite(n);  // snappy wrote straight into our block
    } else {
      out_->Append(std::string_view(bytes, n));
    }
    handed_out_ = nullptr;
  }
  char* GetAppendBuffer(size_t length, char* scratch) override {
    std::span<char> space = out_->PrepareWrite(1);
    if (space.size() < length) return scratch;  // do not waste a block's tail on a big request
    handed_out_ = space.data();
    handed_size_ = space.size();
    return handed_out_;
  }
  bool overflowed() const { return written_ > max_output_; }

 private:
  net::BufferChain* out_;
  size_t max_output_, written_ = 0;
  char* handed_out_ = nullptr;
  size_t handed_size_ = 0;
};

// Reads snappy's leading varint32 (the uncompressed length) without consuming the chain.
bool SnappyLength(const net::BufferChain& in, uint32_t* length) {
  unsigned char head[5];
  const size_t n = in.CopyTo(head, sizeof head);
  uint32_t value = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i == 4 && head[i] > 0x0f) return false;
    value |= uint32_t{head[i] & 0x7fu} << (7 * i);
    if ((head[i] & 0x80) == 0) {
      *length = value;
      return true;
    }
  }
  return false;
}

// --- zlib (gzip and zlib formats differ only in windowBits)

int WindowBits(int compress_type) { return compress_type == COMPRESS_TYPE_GZIP ? 15 + 16 : 15; }

bool Deflate(int compress_type, const net::BufferChain& in, net::BufferChain* out,
             std::string* error) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, WindowBits(compress_type), 8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    *error = "deflateInit2 failed";
    return false;
  }
  const size_t spans = in.span_count();
  size_t index = 0;
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (z.avail_in == 0 && index < spans) {
      const std::span<const char> s = in.span(index++);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(s.data()));
      z.avail_in = static_cast<uInt>(s.size());  // spans are far below 4 GiB
    }
    const int flush = (index == spans) ? Z_FINISH : Z_NO_FLUSH;
    std::span<char> space = out->PrepareWrite(64);
    const size_t room = std::min<size_t>(space.size(), UINT_MAX);
    z.next_out = reinterpret_cast<Bytef*>(space.data());
    z.avail_out = static_cast<uInt>(room);
    rc = deflate(&z, flush);
    out->CommitWrite(room - z.avail_out);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
      *error = std::string("deflate failed: ") + (z.msg ? z.msg : "unknown error");
      deflateEnd(&z);
      return false;
    }
  }
  deflateEnd(&z);
  return true;
}

bool Inflate(int compress_type, const net::BufferChain& in, net::BufferChain* out,
             std::string* error, size_t max_output) {
  z_stream z{};
  if (inflateInit2(&z, WindowBits(compress_type)) != Z_OK) {
    *error = "inflateInit2 failed";
    return false;
  }
  const char* format = compress_type == COMPRESS_TYPE_GZIP ? "gzip" : "zlib";
  auto fail = [&](std::string why) {
    *error = std::string("bad ") + format + " data: " + why;
    inflateEnd(&z);
    return false;
  };
  const size_t spans = in.span_count();
  size_t index = 0, produced = 0;
  bool stream_end = false;
  for (;;) {
    if (z.avail_in == 0 && index < spans) {
      const std::span<const char> s = in.span(index++);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(s.data()));
      z.avail_in = static_cast<uInt>(s.size());
    }
    const bool input_done = z.avail_in == 0 && index == spans;
    if (stream_end) {
      if (input_done) break;
      // More bytes after a complete stream: a further gzip member (RFC 1952 allows several);
      // anything else fails the header check of the next round.
      inflateReset(&z);
      stream_end = false;
    }
    std::span<char> space = out->PrepareWrite(64);
    // Never more than one byte past the cap: that byte tells an overflow from an exact fit.
    const size_t room = std::min<size_t>({space.size(), UINT_MAX, max_output - produced + 1});
    z.next_out = reinterpret_cast<Bytef*>(space.data());
    z.avail_out = static_cast<uInt>(room);
    const int rc = inflate(&z, Z_NO_FLUSH);
    const size_t n = room - z.avail_out;
    produced += n;
    if (produced > max_output) {
      *error = std::string(format) + " data decompresses to more than " +
               std::to_string(max_output) + " bytes";  // a limit, not bad data
      inflateEnd(&z);
      return false;
    }
    out->CommitWrite(n);
    if (rc == Z_STREAM_END) {
      stream_end = true;
    } else if (rc == Z_NEED_DICT) {
      return fail("preset dictionary required");
    } else if (rc == Z_OK || rc == Z_BUF_ERROR) {
      // All input consumed and zlib did not fill the output: it needs bytes that never come.
      if (z.avail_in == 0 && index == spans && z.avail_out != 0) break;
    } else {
      return fail(z.msg ? z.msg : "inflate error " + std::to_string(rc));
    }
  }
  if (!stream_end) return fail("truncated stream");
  inflateEnd(&z);
  return true;
}

}  // namespace

const char* CompressTypeName(int compress_type) noexcept {
  switch (compress_type) {
    case COMPRESS_TYPE_NONE:
      return "none";
    case COMPRESS_TYPE_SNAPPY:
      return "snappy";
    case COMPRESS_TYPE_GZIP:
      return "gzip";
    case COMPRESS_TYPE_ZLIB:
      return "zlib";
    default:
      return "unknown";
  }
}

bool IsSupportedCompressType(int compress_type) noexcept {
  return compress_type >= COMPRESS_TYPE_NONE && compress_type <= COMPRESS_TYPE_ZLIB;
}

bool Compress(int compress_type, const net::BufferChain& in, net::BufferChain* out,
              std::string* error) {
  if (!IsSupportedCompressType(compress_type)) {
    *error = "unsupported compress_type=" + std::to_string(compress_type);
    return false;
  }
  net::BufferChain result;
  switch (compress_type) {
    case COMPRESS_TYPE_NONE:
      result.AppendShared(in);
      break;
    case COMPRESS_TYPE_SNAPPY: {
      ChainSource source(in);
      ChainSink sink(&result, SIZE_MAX);
      snappy::Compress(&source, &sink);
      break;
    }
    default:
      if (!Deflate(compress_type, in, &result, error)) return false;
  }
  out->Append(std::move(result));
  return true;
}

bool Decompress(int compress_type, const net::BufferChain& in, net::BufferChain* out,
                std::string* error, size_t max_output) {
  if (!IsSupportedCompressType(compress_type)) {
    *error = "unsupported compress_type=" + std::to_string(compress_type);
    return false;
  }
  if (in.empty()) return true;
  net::BufferChain result;
  switch (compress_type) {
    case COMPRESS_TYPE_NONE:
      if (in.size() > max_output) {
        *error = "payload larger than " + std::to_string(max_output) + " bytes";
        return false;
      }
      result.AppendShared(in);
      break;
    case COMPRESS_TYPE_SNAPPY: {
      uint32_t length = 0;
      if (!SnappyLength(in, &length)) {
        *error = "bad snappy data: invalid length header";
        return false;
      }
      if (length > max_output) {
        *error = "bad snappy data: decompresses to " + std::to_string(length) +
                 " bytes, more than " + std::to_string(max_output);
        return false;
      }
      ChainSource source(in);
      ChainSink sink(&result, max_output);
      if (!snappy::Uncompress(&source, &sink) || sink.overflowed()) {
        *error = "bad snappy data: corrupt block";
        return false;
      }
      break;
    }
    default:
      if (!Inflate(compress_type, in, &result, error, max_output)) return false;
  }
  out->Append(std::move(result));
  return true;
}

}  // namespace arenarpc::protocol
