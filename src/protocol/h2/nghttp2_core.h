#pragma once
// Nghttp2Core: the libnghttp2 session both gRPC sessions (client and server) drive — created with
// their callbacks, the SETTINGS they announce and their connection receive budget (no automatic
// WINDOW_UPDATEs: stream windows reopen by hand, the sessions' memory bounds), fed input, drained
// of output. Its first failure ends the connection (GOAWAY) and is remembered: error() says why.
// Owns the nghttp2_session; what the streams mean stays with the owner's callbacks.

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "arenarpc/buffer_chain.h"
#include "protocol/h2/nghttp2_glue.h"

namespace arenarpc::protocol::h2 {

class Nghttp2Core {
 public:
  enum class Side { kClient, kServer };

  // `user_data` reaches the callbacks. SETTINGS and the connection window are queued at once (a
  // failure there fails the core).
  Nghttp2Core(Side side, const SessionCallbacks& callbacks,
              std::initializer_list<nghttp2_settings_entry> settings, size_t receive_budget,
              void* user_data);
  Nghttp2Core(const Nghttp2Core&) = delete;
  Nghttp2Core& operator=(const Nghttp2Core&) = delete;

  nghttp2_session* get() const noexcept { return session_.get(); }

  // rv >= 0: true. Else false, and the first failure ends the session: GOAWAY ENHANCE_YOUR_CALM
  // for a flood nghttp2 saw, PROTOCOL_ERROR otherwise; error() becomes "what: nghttp2's reason".
  bool Check(int rv, std::string_view what);
  // Ends the session for a reason of the owner's (e.g. a flood it counted): GOAWAY `h2_error`.
  void Terminate(std::string why, uint32_t h2_error);
  // Feeds input to nghttp2 (the callbacks run in here): nghttp2's result, unchecked.
  ssize_t Feed(std::string_view input) {
    return nghttp2_session_mem_recv(session_.get(), reinterpret_cast<const uint8_t*>(input.data()),
                                    input.size());
  }
  // Appends what the session may send now to *out, until *out holds `max_bytes` or more (*more:
  // frames may wait). 0, or nghttp2's error, unchecked.
  int Drain(net::BufferChain* out, size_t max_bytes = SIZE_MAX, bool* more = nullptr) {
    return DrainSession(session_.get(), out, max_bytes, more);
  }

  bool failed() const noexcept { return failed_; }
  const std::string& error() const noexcept { return error_; }
  // Why the connection ends, when the owner learns it otherwise (the GOAWAY it sent).
  void set_error(std::string error) { error_ = std::move(error); }
  bool want_read() const noexcept { return nghttp2_session_want_read(session_.get()) != 0; }
  bool want_write() const noexcept { return nghttp2_session_want_write(session_.get()) != 0; }

  // Calls feed(span) for each span of `input` in order until one returns false.
  template <class Feed>
  static bool ForEachSpan(const net::BufferChain& input, Feed&& feed) {
    for (size_t i = 0; i < input.span_count(); ++i) {
      const std::span<const char> span = input.span(i);
      if (!feed(std::string_view(span.data(), span.size()))) return false;
    }
    return true;
  }

 private:
  struct Deleter {
    void operator()(nghttp2_session* session) const noexcept { nghttp2_session_del(session); }
  };
  std::unique_ptr<nghttp2_session, Deleter> session_;
  bool failed_ = false;
  std::string error_;
};

}  // namespace arenarpc::protocol::h2
