#include "protocol/h2/bdp_window.h"

#include <algorithm>
#include <cstring>

#include "protocol/h2/nghttp2_glue.h"

namespace arenarpc::protocol::h2 {

bool BdpWindow::OnData(size_t bytes) noexcept {
  if (probing_) {
    sample_ += bytes;
    return false;
  }
  if (max_window_ <= window_) return false;
  probing_ = true;
  sample_ = 0;  // the bytes of this frame were sent before the probe: not part of its trip
  return true;
}

uint32_t BdpWindow::OnPingAck(const uint8_t* opaque) noexcept {
  if (!probing_ || std::memcmp(opaque, kProbe.data(), kProbe.size()) != 0) return 0;
  probing_ = false;
  estimate_ = std::max(estimate_, sample_);
  if (sample_ * 3 < uint64_t{window_} * 2) return 0;  // the window did not limit this trip
  const uint64_t target = std::min<uint64_t>(estimate_ * 2, max_window_);
  if (target <= window_) return 0;
  window_ = static_cast<uint32_t>(target);
  return window_;
}

int SubmitBdpProbe(nghttp2_session* session) {
  return nghttp2_submit_ping(session, NGHTTP2_FLAG_NONE, BdpWindow::kProbe.data());
}

int GrowReceiveWindows(nghttp2_session* session, uint32_t window, uint32_t* stream_window,
                       uint32_t* connection_window) {
  if (window > *stream_window) {
    *stream_window = window;
    const nghttp2_settings_entry entry{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, window};
    if (const int rv = nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, &entry, 1); rv != 0) {
      return rv;
    }
  }
  if (window > *connection_window) {
    *connection_window = window;
    return OpenConnectionWindow(session, window);
  }
  return 0;
}

}  // namespace arenarpc::protocol::h2
