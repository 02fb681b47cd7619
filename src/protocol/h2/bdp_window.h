#pragma once
// BdpWindow: grows an HTTP/2 receiver's flow-control windows from a bandwidth-delay estimate, as
// gRPC core does. When DATA arrives and no probe is out, the receiver sends a PING and counts the
// DATA bytes that arrive until its ACK: about what the peer could send in one round trip. While
// a sample fills at least 2/3 of the window (the window, not the link, limited the transfer), the
// window's target becomes 2 x the largest sample, never past `max_window`; windows never shrink.
// One probe at a time; none once the window reached max_window (nothing left to learn).

#include <nghttp2/nghttp2.h>

#include <array>
#include <cstddef>
#include <cstdint>

namespace arenarpc::protocol::h2 {

class BdpWindow {
 public:
  // The PING payload that marks our probes (a peer's own PINGs are not ours).
  static constexpr std::array<uint8_t, 8> kProbe = {'a', 'r', 'b', 'd', 'p', 'w', 'i', 'n'};

  // `window`: the window the receiver starts with; `max_window` 0: no growth (no probes).
  BdpWindow(uint32_t window, uint32_t max_window) noexcept
      : window_(window), max_window_(max_window) {}

  // `bytes` of DATA received. true: send a probe now (a PING with kProbe).
  bool OnData(size_t bytes) noexcept;
  // A PING ACK arrived; `opaque` its payload. Returns the window to grow to (larger than the
  // last one), or 0.
  uint32_t OnPingAck(const uint8_t* opaque) noexcept;

 private:
  uint32_t window_;
  const uint32_t max_window_;
  bool probing_ = false;
  uint64_t sample_ = 0;    // DATA bytes since the probe went out
  uint64_t estimate_ = 0;  // the largest sample: the bytes one round trip carried
};

// Queues a probe on `session`: nghttp2's result.
int SubmitBdpProbe(nghttp2_session* session);
// Grows the receive windows of `session` to `window`, each only upward: the stream window by a
// new SETTINGS_INITIAL_WINDOW_SIZE (nghttp2 applies it to open streams once the peer ACKs it),
// the connection window by a WINDOW_UPDATE of the difference. *stream_window and
// *connection_window are the current ones, updated. nghttp2's first error, or 0.
int GrowReceiveWindows(nghttp2_session* session, uint32_t window, uint32_t* stream_window,
                       uint32_t* connection_window);

}  // namespace arenarpc::protocol::h2
