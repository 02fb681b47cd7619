#include "protocol/h2/nghttp2_glue.h"

#include <algorithm>
#include <cstdint>
#include <string_view>

namespace arenarpc::protocol::h2 {

nghttp2_session* NewSession(bool server, const SessionCallbacks& set, void* user_data) {
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, set.on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, set.on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, set.on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, set.on_data_chunk_recv);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, set.on_stream_close);
  nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, set.on_frame_send);
  if (set.on_invalid_frame_recv != nullptr) {
    nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(callbacks,
                                                                 set.on_invalid_frame_recv);
  }
  if (set.on_error != nullptr)
    nghttp2_session_callbacks_set_error_callback2(callbacks, set.on_error);
  nghttp2_option* option = nullptr;
  nghttp2_option_new(&option);
  // Stream windows reopen as the owner's budget allows: its memory bound.
  nghttp2_option_set_no_auto_window_update(option, 1);
  nghttp2_option_set_no_closed_streams(option, 1);
  nghttp2_session* session = nullptr;
  if (server) {
    nghttp2_session_server_new2(&session, callbacks, user_data, option);
  } else {
    nghttp2_session_client_new2(&session, callbacks, user_data, option);
  }
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  return session;
}

int OpenConnectionWindow(nghttp2_session* session, size_t budget) {
  return nghttp2_session_set_local_window_size(
      session, NGHTTP2_FLAG_NONE, 0,
      static_cast<int32_t>(std::clamp<size_t>(budget, 65535, INT32_MAX)));
}

std::string TerminateAfterError(nghttp2_session* session, int rv, std::string_view what) {
  nghttp2_session_terminate_session(
      session, rv == NGHTTP2_ERR_FLOODED ? NGHTTP2_ENHANCE_YOUR_CALM : NGHTTP2_PROTOCOL_ERROR);
  return std::string(what) + ": " + nghttp2_strerror(rv);
}

int DrainSession(nghttp2_session* session, net::BufferChain* out, size_t max_bytes, bool* more) {
  if (more != nullptr) *more = false;
  for (;;) {
    if (out->size() >= max_bytes) {
      if (more != nullptr) *more = nghttp2_session_want_write(session) != 0;
      return 0;
    }
    const uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session, &data);
    if (n <= 0) return static_cast<int>(n);
    out->Append(std::string_view(reinterpret_cast<const char*>(data), static_cast<size_t>(n)));
  }
}

}  // namespace arenarpc::protocol::h2
