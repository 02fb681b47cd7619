#pragma once
// One attempt's baidu_std request frame as packed (spec §1), with the deadline its meta's
// timeout_ms was computed from: a frame that waits in the client's queue before it is handed to
// the socket gets the time still left stamped again (RestampTimeout), so the server is told the
// deadline the caller still has, not the one it had when the frame was packed.

#include <chrono>
#include <cstdint>

#include "arenarpc/buffer_chain.h"

namespace arenarpc::client {

struct BaiduStdRequestFrame {
  using Clock = std::chrono::steady_clock;
  net::BufferChain bytes;
  // Set when the meta carries timeout_ms (ChannelOptions::deliver_timeout with a deadline).
  Clock::time_point deadline = Clock::time_point::max();
  int32_t timeout_ms = 0;  // the meta's timeout_ms as packed
};

// timeout_ms to send at `now` for `deadline`: whole milliseconds left, at least 1.
int32_t TimeoutMsLeft(std::chrono::steady_clock::time_point deadline,
                      std::chrono::steady_clock::time_point now);

enum class RestampResult {
  kUnchanged,  // no timeout in the meta, or no whole millisecond passed since it was packed
  kRestamped,  // the meta now carries the time left, re-encoded as a fresh frame would be
  kExpired,    // the deadline passed: the frame is left as it was; the caller drops it
  kMalformed,  // the bytes are not a frame this client packed (unchanged)
};

// Stamps the frame's meta with the time left at `now`: only the header and the meta are
// re-encoded (a few hundred bytes); the payload's and attachment's blocks move over as they are.
RestampResult RestampTimeout(BaiduStdRequestFrame& frame,
                             std::chrono::steady_clock::time_point now);

}  // namespace arenarpc::client
