#pragma once
// WireScanner: reads protobuf wire-format tags and lengths from a ZeroCopyInputStream and skips
// everything else, for ShapePlan's pre-scan. About 4x fewer instructions per field than
// CodedInputStream, which matters because a request is scanned once more than it is parsed.
// Positions are absolute byte offsets from the start of the stream.

#include <google/protobuf/io/zero_copy_stream.h>

#include <cstdint>
#include <limits>

namespace arenarpc::memory {

class WireScanner {
 public:
  static constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();

  explicit WireScanner(google::protobuf::io::ZeroCopyInputStream& in) : in_(in) {}

  int64_t position() const noexcept { return base_ + (p_ - begin_); }
  // True at the end of the stream (no more bytes in any chunk).
  bool AtEnd() noexcept { return p_ == end_ && !Refill(); }

  bool ReadVarint32(uint32_t* value) noexcept {
    if (end_ - p_ >= 5) {  // fast path: the whole varint is in this chunk
      uint32_t result = p_[0];
      if (result < 0x80) {
        ++p_;
        *value = result;
        return true;
      }
      result -= 0x80;
      for (int i = 1; i < 5; ++i) {
        const uint32_t byte = p_[i];
        result += byte << (7 * i);
        if (byte < 0x80) {
          p_ += i + 1;
          *value = result;
          return true;
        }
        result -= 0x80u << (7 * i);
      }
      return false;  // longer than 5 bytes: not a 32-bit tag or length
    }
    uint64_t v;
    if (!ReadVarintSlow(&v) || v > std::numeric_limits<uint32_t>::max()) return false;
    *value = static_cast<uint32_t>(v);
    return true;
  }

  bool SkipVarint() noexcept {
    uint64_t ignored;
    return ReadVarintSlow(&ignored);
  }

  bool Skip(uint64_t n) noexcept {
    while (n > static_cast<uint64_t>(end_ - p_)) {
      n -= static_cast<uint64_t>(end_ - p_);
      p_ = end_;
      if (!Refill()) return false;
    }
    p_ += n;
    return true;
  }

  // Skips every field up to `end` (kNoLimit: the end of the stream), counting each
  // length-delimited one in counts[slot]: slot is small_slots[number] for a one-byte tag (field
  // numbers below 16), slot_of(number) otherwise; untracked fields count in a slot the caller
  // ignores, so the loop has no branch on the field. The common case — one-byte tag and length,
  // value inside the current chunk — runs in a tight loop on local pointers (the bulk of a request
  // is short strings).
  template <typename SlotOf>
  bool CountAll(int64_t end, const uint16_t* small_slots, uint32_t* counts,
                SlotOf&& slot_of) noexcept {
    for (;;) {
      const uint8_t* p = p_;
      const uint8_t* stop = end_;
      if (end != kNoLimit && end - position() < stop - p) stop = p + (end - position());
      if (stop - p >= 2) {
        const uint8_t* const last = stop - 2;  // the last position a whole tag and length fit
        do {
          const uint32_t tag = p[0];
          const uint32_t length = p[1];
          // A one-byte tag of wire type 2 and a one-byte length whose value is in the chunk.
          if (((tag | length << 8) & 0x8087) != 2 || length > static_cast<uint32_t>(last - p))
            break;
          ++counts[small_slots[tag >> 3]];
          p += 2 + length;
        } while (p <= last);
      }
      p_ = p;
      if (end == kNoLimit ? AtEnd() : position() >= end) return true;
      // One field the slow way, then back to the fast loop.
      uint32_t tag;
      if (!ReadVarint32(&tag) || tag == 0) return false;
      if ((tag & 7) == 2) {
        uint32_t length;
        if (!ReadVarint32(&length) || !Skip(length)) return false;
        ++counts[slot_of(tag >> 3)];
      } else if (!SkipField(tag)) {
        return false;
      }
      if (end != kNoLimit && position() > end) return false;
    }
  }

  // Skips the value of a field whose tag was just read. Groups are skipped whole.
  bool SkipField(uint32_t tag, int depth = 0) noexcept {
    switch (tag & 7) {
      case 0:
        return SkipVarint();
      case 1:
        return Skip(8);
      case 2: {
        uint32_t length;
        return ReadVarint32(&length) && Skip(length);
      }
      case 3: {  // start group: skip fields up to the matching end group
        if (depth > 64) return false;
        const uint32_t end_tag = (tag & ~7u) | 4;
        for (;;) {
          uint32_t inner;
          if (!ReadVarint32(&inner) || inner == 0) return false;
          if (inner == end_tag) return true;
          if (!SkipField(inner, depth + 1)) return false;
        }
      }
      case 5:
        return Skip(4);
      default:
        return false;  // end group without a start, or wire types 6/7
    }
  }

 private:
  bool Refill() noexcept {
    const void* data;
    int size;
    while (in_.Next(&data, &size)) {
      if (size <= 0) continue;
      base_ += end_ - begin_;
      begin_ = p_ = static_cast<const uint8_t*>(data);
      end_ = begin_ + size;
      return true;
    }
    return false;
  }

  bool ReadVarintSlow(uint64_t* value) noexcept {
    uint64_t result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_ && !Refill()) return false;
      const uint64_t byte = *p_++;
      result |= (byte & 0x7f) << shift;
      if (byte < 0x80) {
        *value = result;
        return true;
      }
    }
    return false;
  }

  google::protobuf::io::ZeroCopyInputStream& in_;
  const uint8_t* begin_ = nullptr;
  const uint8_t* p_ = nullptr;
  const uint8_t* end_ = nullptr;
  int64_t base_ = 0;  // absolute offset of begin_
};

}  // namespace arenarpc::memory
