#pragma once
// A test's HTTP/2 server on a raw nghttp2 server session, driven by a script: bytes in (Input),
// bytes out (Output); the test decides what each stream gets back — normal gRPC responses, or
// hostile ones (huge header lists, endless DATA, nothing at all, GOAWAY). nghttp2 keeps it honest
// about HTTP/2 framing and flow control, so only the test's chosen misbehaviour reaches the client.
#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace arenarpc::testing_h2 {

using Headers = std::vector<std::pair<std::string, std::string>>;

class ScriptedH2Server {
 public:
  // Produces up to `length` body bytes into buf; sets *eof at the end (trailers follow).
  using BodySource = std::function<size_t(uint8_t* buf, size_t length, bool* eof)>;

  ScriptedH2Server() {
    nghttp2_session_callbacks* callbacks = nullptr;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, &OnHeader);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &OnFrameRecv);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &OnStreamClose);
    nghttp2_option* option = nullptr;
    nghttp2_option_new(&option);
    nghttp2_option_set_max_send_header_block_length(option, 64u << 20);  // hostile sizes allowed
    nghttp2_session_server_new2(&session_, callbacks, this, option);
    nghttp2_option_del(option);
    nghttp2_session_callbacks_del(callbacks);
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, nullptr, 0);
  }
  ~ScriptedH2Server() { nghttp2_session_del(session_); }
  ScriptedH2Server(const ScriptedH2Server&) = delete;
  ScriptedH2Server& operator=(const ScriptedH2Server&) = delete;

  // Called once per stream whose request ended (END_STREAM from the client).
  std::function<void(int32_t stream_id)> on_request;
  // Called once per stream whose request HEADERS came without END_STREAM (a streaming client).
  std::function<void(int32_t stream_id)> on_open_request;

  bool Input(const std::string& bytes) {
    return nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(bytes.data()),
                                    bytes.size()) >= 0;
  }
  std::string Output() {
    std::string out;
    const uint8_t* data = nullptr;
    for (ssize_t n; (n = nghttp2_session_mem_send(session_, &data)) > 0;) {
      out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    }
    return out;
  }
  bool WantsIo() const {
    return nghttp2_session_want_read(session_) != 0 || nghttp2_session_want_write(session_) != 0;
  }

  // Response headers, then `body` (if any) and `trailers` (if any; else the body ends the stream).
  void Respond(int32_t stream_id, Headers headers, BodySource body, Headers trailers) {
    auto& stream = streams_[stream_id];
    stream.body = std::move(body);
    stream.trailers = std::move(trailers);
    std::vector<nghttp2_nv> nv = Nv(headers);
    nghttp2_data_provider provider{};
    provider.read_callback = &ReadBody;
    nghttp2_submit_response(session_, stream_id, nv.data(), nv.size(),
                            stream.body ? &provider : nullptr);
  }
  // An OK gRPC response carrying `message` (prefixed here), plus metadata in the headers.
  void RespondOk(int32_t stream_id, const std::string& message, Headers metadata = {}) {
    std::string framed = {0, static_cast<char>(message.size() >> 24),
                          static_cast<char>(message.size() >> 16),
                          static_cast<char>(message.size() >> 8),
                          static_cast<char>(message.size())};
    framed += message;
    Headers headers = {{":status", "200"}, {"content-type", "application/grpc"}};
    headers.insert(headers.end(), metadata.begin(), metadata.end());
    auto left = std::make_shared<std::string>(std::move(framed));
    Respond(stream_id, std::move(headers),
            [left](uint8_t* buf, size_t length, bool* eof) {
              const size_t n = std::min(length, left->size());
              std::copy_n(left->data(), n, buf);
              left->erase(0, n);
              *eof = left->empty();
              return n;
            },
            {{"grpc-status", "0"}});
  }
  void GoAway(int32_t last_stream_id) {
    nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, last_stream_id, NGHTTP2_NO_ERROR, nullptr,
                          0);
  }
  void Resume(int32_t stream_id) { nghttp2_session_resume_data(session_, stream_id); }

  // What the client sent.
  std::string header(int32_t stream_id, const std::string& name) const {
    auto it = requests_.find(stream_id);
    if (it == requests_.end()) return {};
    for (const auto& [n, v] : it->second) {
      if (n == name) return v;
    }
    return {};
  }
  const std::vector<int32_t>& requests() const { return request_order_; }
  int canceled_by_client() const { return canceled_by_client_; }
  int headers_frames() const { return headers_frames_; }
  nghttp2_session* session() { return session_; }

 private:
  struct Stream {
    BodySource body;
    Headers trailers;
  };

  static std::vector<nghttp2_nv> Nv(Headers& headers) {
    std::vector<nghttp2_nv> nv;
    for (auto& [name, value] : headers) {
      nv.push_back({reinterpret_cast<uint8_t*>(name.data()),
                    reinterpret_cast<uint8_t*>(value.data()), name.size(), value.size(),
                    NGHTTP2_NV_FLAG_NONE});
    }
    return nv;
  }
  static ScriptedH2Server& Self(void* p) { return *static_cast<ScriptedH2Server*>(p); }
  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t name_size, const uint8_t* value, size_t value_size, uint8_t,
                      void* user_data) {
    Self(user_data).requests_[frame->hd.stream_id].emplace_back(
        std::string(reinterpret_cast<const char*>(name), name_size),
        std::string(reinterpret_cast<const char*>(value), value_size));
    return 0;
  }
  static int OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    ScriptedH2Server& self = Self(user_data);
    if (frame->hd.type == NGHTTP2_HEADERS) ++self.headers_frames_;
    if (frame->hd.type == NGHTTP2_RST_STREAM && frame->rst_stream.error_code == NGHTTP2_CANCEL) {
      ++self.canceled_by_client_;
    }
    if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
      self.request_order_.push_back(frame->hd.stream_id);
      if (self.on_request) self.on_request(frame->hd.stream_id);
    } else if (frame->hd.type == NGHTTP2_HEADERS && self.on_open_request) {
      self.on_open_request(frame->hd.stream_id);
    }
    return 0;
  }
  static int OnStreamClose(nghttp2_session*, int32_t stream_id, uint32_t, void* user_data) {
    Self(user_data).streams_.erase(stream_id);
    return 0;
  }
  static ssize_t ReadBody(nghttp2_session* session, int32_t stream_id, uint8_t* buf,
                          size_t length, uint32_t* flags, nghttp2_data_source*, void* user_data) {
    ScriptedH2Server& self = Self(user_data);
    auto it = self.streams_.find(stream_id);
    if (it == self.streams_.end()) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      return 0;
    }
    bool eof = false;
    const size_t n = it->second.body(buf, length, &eof);
    if (eof) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      if (!it->second.trailers.empty()) {
        *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        std::vector<nghttp2_nv> nv = Nv(it->second.trailers);
        nghttp2_submit_trailer(session, stream_id, nv.data(), nv.size());
      }
    } else if (n == 0) {
      return NGHTTP2_ERR_DEFERRED;  // Resume() wakes it
    }
    return static_cast<ssize_t>(n);
  }

  nghttp2_session* session_ = nullptr;
  std::map<int32_t, Stream> streams_;
  std::map<int32_t, Headers> requests_;
  std::vector<int32_t> request_order_;
  int canceled_by_client_ = 0;
  int headers_frames_ = 0;
};

}  // namespace arenarpc::testing_h2
