#pragma once
// What the client and server gRPC sessions share of libnghttp2's setup and output: one session
// with the callbacks they install, stream windows reopened by hand (the sessions' memory bounds),
// and the loop that collects every byte it may send.

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "arenarpc/buffer_chain.h"

namespace arenarpc::protocol::h2 {

struct SessionCallbacks {
  nghttp2_on_begin_headers_callback on_begin_headers = nullptr;
  nghttp2_on_header_callback on_header = nullptr;
  nghttp2_on_frame_recv_callback on_frame_recv = nullptr;
  nghttp2_on_data_chunk_recv_callback on_data_chunk_recv = nullptr;
  nghttp2_on_stream_close_callback on_stream_close = nullptr;
  nghttp2_on_frame_send_callback on_frame_send = nullptr;
  nghttp2_on_invalid_frame_recv_callback on_invalid_frame_recv = nullptr;  // optional
  // optional: nghttp2's reason, in words, for a connection error it is about to answer
  nghttp2_error_callback2 on_error = nullptr;
};

// The callbacks every gRPC session installs, from its `Callbacks` struct's static functions.
template <class Callbacks>
SessionCallbacks CommonCallbacks() {
  SessionCallbacks callbacks;
  callbacks.on_begin_headers = &Callbacks::OnBeginHeaders;
  callbacks.on_header = &Callbacks::OnHeader;
  callbacks.on_frame_recv = &Callbacks::OnFrameRecv;
  callbacks.on_data_chunk_recv = &Callbacks::OnDataChunk;
  callbacks.on_stream_close = &Callbacks::OnStreamClose;
  callbacks.on_frame_send = &Callbacks::OnFrameSend;
  return callbacks;
}

// A server or client session without automatic WINDOW_UPDATEs and without closed-stream history.
nghttp2_session* NewSession(bool server, const SessionCallbacks& callbacks, void* user_data);

// Opens the connection's receive window to `budget` bytes (within HTTP/2's range): it is given
// back as bytes arrive, and the stream windows bound what is held. Returns nghttp2's result.
int OpenConnectionWindow(nghttp2_session* session, size_t budget);

// Ends `session` after nghttp2 call `what` failed with `rv`: GOAWAY ENHANCE_YOUR_CALM for a flood,
// PROTOCOL_ERROR otherwise. Returns the error text, "what: nghttp2's reason".
std::string TerminateAfterError(nghttp2_session* session, int rv, std::string_view what);

// Appends what `session` may send now to *out, frame by frame until *out holds `max_bytes` or
// more (*more = true: frames may wait). Returns 0, or nghttp2's error.
int DrainSession(nghttp2_session* session, net::BufferChain* out, size_t max_bytes = SIZE_MAX,
                 bool* more = nullptr);

}  // namespace arenarpc::protocol::h2
