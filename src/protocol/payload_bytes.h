#pragma once
// PayloadBytes: a received payload's bytes, ready to parse, as a memory::SerializedMessage — the
// receive blocks themselves when the payload was not compressed (no copy), else the inflated copy.
// Filled by OpenPayload (payload_codec.h).

#include <optional>

#include "arenarpc/buffer_chain.h"
#include "arenarpc/memory/serialized_message.h"

namespace arenarpc::protocol {

class PayloadBytes final : public memory::SerializedMessage {
 public:
  PayloadBytes() = default;
  PayloadBytes(const PayloadBytes&) = delete;
  PayloadBytes& operator=(const PayloadBytes&) = delete;

  size_t size() const noexcept override { return bytes_->size(); }
  google::protobuf::io::ZeroCopyInputStream& Read() override { return stream_.emplace(*bytes_); }
  const net::BufferChain& bytes() const noexcept { return *bytes_; }

  // The bytes are `payload` itself, which must outlive this object.
  void Refer(const net::BufferChain& payload) noexcept { bytes_ = &payload; }
  // The bytes are `inflated`, owned from now on.
  void Own(net::BufferChain inflated) noexcept {
    inflated_ = std::move(inflated);
    bytes_ = &inflated_;
  }

 private:
  const net::BufferChain* bytes_ = &inflated_;
  net::BufferChain inflated_;  // only for compressed payloads
  std::optional<net::BufferChainInputStream> stream_;
};

}  // namespace arenarpc::protocol
