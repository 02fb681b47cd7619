#pragma once
// Small BufferChain helpers shared by the protocol tests.
#include <string>
#include <string_view>

#include "arenarpc/buffer_chain.h"
#include "protocol/frame_codec.h"

namespace arenarpc::testing {

inline net::BufferChain Chain(std::string_view bytes) {
  net::BufferChain c;
  c.Append(bytes);
  return c;
}

// The bytes of one encoded frame.
inline std::string EncodeToString(const protocol::RpcMeta& meta, std::string_view payload,
                                  std::string_view attachment) {
  net::BufferChain out;
  protocol::EncodeFrame(meta, Chain(payload), Chain(attachment), &out);
  return out.ToString();
}

}  // namespace arenarpc::testing
