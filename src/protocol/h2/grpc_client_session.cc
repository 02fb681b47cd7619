#include "protocol/h2/grpc_client_session.h"


#include <algorithm>
#include <cctype>

#include "arenarpc/error_codes.h"
#include "protocol/h2/nghttp2_glue.h"

namespace arenarpc::protocol::h2 {

namespace {

nghttp2_nv Nv(const std::string& name, const std::string& value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NONE};
}

}  // namespace

struct GrpcClientSession::Stream {
  int32_t id = 0;
  int64_t tag = 0;
  net::BufferChain out;       // request bytes not handed to nghttp2 yet (prefix + message)
  size_t header_bytes = 0;    // of the header block being received, as HTTP/2 counts them
  bool canceled = false;      // by the owner: no response
  bool headers_seen = false;  // the response's HEADERS arrived
  bool ended = false;         // the server ended its side (END_STREAM)
  int http_status = 0;
  GrpcClientResponse response;
  net::BufferChain body;      // DATA so far (prefix + message)
  size_t unreleased = 0;      // DATA bytes whose stream window was not reopened yet
  size_t connection_unreleased = 0;  // ... whose connection window was not given back yet
  bool streaming = false;
  bool send_closed = false;   // streaming: END_STREAM goes after `out`
  size_t unread = 0;          // streaming: popped message bytes not Release()d yet
};

struct GrpcClientSession::Callbacks {
  static GrpcClientSession& Self(void* user_data) {
    return *static_cast<GrpcClientSession*>(user_data);
  }

  static int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    if (Stream* stream = Self(user_data).Find(frame->hd.stream_id)) {
      stream->header_bytes = 0;
      stream->headers_seen = true;
    }
    return 0;
  }

  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name_bytes,
                      size_t name_size, const uint8_t* value_bytes, size_t value_size, uint8_t,
                      void* user_data) {
    GrpcClientSession& self = Self(user_data);
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    Stream* stream = self.Find(frame->hd.stream_id);
    if (stream == nullptr || stream->canceled || stream->response.error_code != 0) return 0;
    stream->header_bytes += name_size + value_size + 32;
    if (stream->header_bytes > self.limits_.max_header_list_bytes) {
      ++self.counters_.header_limit_hits;
      self.Abort(*stream, ERESPONSE,
                 "gRPC response header list larger than " +
                     std::to_string(self.limits_.max_header_list_bytes) + " bytes",
                 NGHTTP2_ENHANCE_YOUR_CALM);
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // nghttp2 skips the rest of the block
    }
    const std::string_view name(reinterpret_cast<const char*>(name_bytes), name_size);
    const std::string_view value(reinterpret_cast<const char*>(value_bytes), value_size);
    GrpcClientResponse& response = stream->response;
    if (name == ":status") {
      stream->http_status = 0;
      for (char c : value) {
        stream->http_status = std::isdigit(static_cast<unsigned char>(c))
                                  ? std::min(stream->http_status * 10 + (c - '0'), 1000)
                                  : 1000;
      }
    } else if (name == "grpc-status") {
      int status = value.empty() ? -1 : 0;
      for (char c : value) {
        status = std::isdigit(static_cast<unsigned char>(c)) && status < 1000000
                     ? status * 10 + (c - '0')
                     : -1;
        if (status < 0) break;
      }
      response.grpc_status = status < 0 ? 2 : status;  // unparsable: UNKNOWN
    } else if (name == "grpc-message") {
      response.grpc_message = PercentDecode(value);
    } else if (name == "grpc-encoding") {
      response.encoding = value == "identity" ? "" : value;
    } else if (name == kStatusDetailsHeader) {
      DecodeBinaryHeader(value, &response.status_details);  // not base64: none
    } else if (!IsReservedHeader(name)) {
      response.metadata.emplace_back(name, value);
    }
    return 0;
  }

  static int OnFrameRecv(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
    GrpcClientSession& self = Self(user_data);
    if (frame->hd.type == NGHTTP2_PING && (frame->hd.flags & NGHTTP2_FLAG_ACK) != 0) {
      if (const uint32_t window = self.bdp_.OnPingAck(frame->ping.opaque_data)) {
        self.GrowWindows(window);
      }
      return 0;
    }
    if (frame->hd.type == NGHTTP2_GOAWAY) {
      self.goaway_ = true;  // nghttp2 closes the streams past last_stream_id as REFUSED_STREAM
      self.FailWaiting("the server sent GOAWAY");
      return 0;
    }
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
    if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) return 0;
    Stream* stream = self.Find(frame->hd.stream_id);
    if (stream == nullptr) return 0;
    stream->ended = true;
    if (stream->streaming && (!stream->send_closed || !stream->out.empty())) {
      // The server finished the call while requests were still to come: they never will (gRPC
      // clients end such a stream with RST_STREAM NO_ERROR too).
      self.unsent_bytes_ -= stream->out.size();
      stream->out.clear();
      stream->send_closed = true;
      nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream->id, NGHTTP2_NO_ERROR);
    }
    return 0;
  }

  static int OnDataChunk(nghttp2_session* session, uint8_t, int32_t stream_id,
                         const uint8_t* data, size_t size, void* user_data) {
    GrpcClientSession& self = Self(user_data);
    if (self.bdp_.OnData(size)) self.Check(SubmitBdpProbe(session), "PING");
    Stream* stream = self.Find(stream_id);
    if (stream == nullptr || stream->canceled || stream->response.error_code != 0) {
      nghttp2_session_consume(session, stream_id, size);  // dropped: nothing is held
      return 0;
    }
    stream->unreleased += size;
    stream->connection_unreleased += size;
    if (!stream->streaming) self.response_bytes_ += size;
    stream->body.Append(std::string_view(reinterpret_cast<const char*>(data), size));
    if (stream->streaming) {
      self.SplitMessages(*stream);
      if (stream->unread == 0 && stream->unreleased > 0 && stream->response.error_code == 0) {
        nghttp2_session_consume_stream(session, stream_id, stream->unreleased);
        stream->unreleased = 0;
      }
      self.GrantWindows();
      return 0;
    }
    if (stream->body.size() >= kMessagePrefixSize) {
      const uint32_t length = DecodeMessageLength(stream->body);
      if (length > self.limits_.max_message_bytes) {
        ++self.counters_.message_limit_hits;
        self.Abort(*stream, ERESPONSE,
                   "gRPC response message of " + std::to_string(length) +
                       " bytes is larger than max_body_size=" +
                       std::to_string(self.limits_.max_message_bytes),
                   NGHTTP2_CANCEL);
      } else if (stream->body.size() > kMessagePrefixSize + length) {
        self.Abort(*stream, ERESPONSE, "more than one gRPC response message: the call is unary",
                   NGHTTP2_CANCEL);
      }
    }
    self.GrantWindows();
    return 0;
  }

  static int OnStreamClose(nghttp2_session*, int32_t stream_id, uint32_t error_code,
                           void* user_data) {
    GrpcClientSession& self = Self(user_data);
    auto it = self.streams_.find(stream_id);
    if (it == self.streams_.end()) return 0;
    self.ReturnConnection(*it->second, it->second->connection_unreleased);  // popped promptly
    self.Finish(*it->second, error_code);
    self.streams_.erase(it);
    self.GrantWindows();
    return 0;
  }

  static int OnFrameSend(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    GrpcClientSession& self = Self(user_data);
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
      if (Stream* stream = self.Find(frame->hd.stream_id)) self.started_.push_back(stream->tag);
    }
    return 0;
  }

  static ssize_t ReadBody(nghttp2_session*, int32_t stream_id, uint8_t* buf, size_t length,
                          uint32_t* data_flags, nghttp2_data_source*, void* user_data) {
    GrpcClientSession& self = Self(user_data);
    Stream* stream = self.Find(stream_id);
    if (stream == nullptr) {
      *data_flags |= NGHTTP2_DATA_FLAG_EOF;
      return 0;
    }
    if (stream->out.empty() && stream->streaming && !stream->send_closed) {
      return NGHTTP2_ERR_DEFERRED;  // Send() / CloseSend() resume it
    }
    const size_t n = stream->out.CopyTo(buf, length);
    stream->out.PopFront(n);
    self.unsent_bytes_ -= n;
    if (stream->streaming && n > 0) self.drained_.push_back(stream->tag);
    if (stream->out.empty() && (!stream->streaming || stream->send_closed)) {
      *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    }
    return static_cast<ssize_t>(n);
  }
};

GrpcClientSession::GrpcClientSession(const Limits& limits)
    : limits_(limits),
      stream_window_(std::clamp<uint32_t>(limits.stream_window, 1, INT32_MAX)),
      connection_window_(std::clamp<uint32_t>(limits.connection_window, 65535, INT32_MAX)),
      bdp_(std::min(stream_window_, connection_window_), limits.max_window),
      h2_(Nghttp2Core::Side::kClient, CommonCallbacks<Callbacks>(),
          {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
           {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE,
            std::clamp<uint32_t>(limits.stream_window, 1, INT32_MAX)},
           {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, limits.max_frame_size},
           {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE,
            static_cast<uint32_t>(std::min<size_t>(limits.max_header_list_bytes, UINT32_MAX))}},
          limits.connection_window, this) {}

GrpcClientSession::~GrpcClientSession() = default;

bool GrpcClientSession::Check(int rv, std::string_view what) {
  if (rv >= 0) return true;
  const bool first = !h2_.failed();
  h2_.Check(rv, what);
  if (first) FailWaiting(h2_.error());
  return false;
}

GrpcClientSession::Stream* GrpcClientSession::Find(int32_t stream_id) {
  auto it = streams_.find(stream_id);
  return it == streams_.end() ? nullptr : it->second.get();
}

void GrpcClientSession::Start(int64_t tag, GrpcClientRequest&& request) {
  if (goaway_ || h2_.failed()) {
    GrpcClientResponse response;
    response.tag = tag;
    response.unprocessed = true;
    response.error_code = EFAILEDSOCKET;
    response.error_text = goaway_ ? "the server sent GOAWAY" : h2_.error();
    ready_.push_back(std::move(response));
    return;
  }
  unsent_bytes_ += request.streaming ? 0 : kMessagePrefixSize + request.message.size();
  waiting_.push_back(Waiting{tag, std::move(request), {}, false});
  StartWaiting();
}

void GrpcClientSession::StartWaiting() {
  const uint32_t limit = std::min(
      limits_.max_concurrent_streams,
      nghttp2_session_get_remote_settings(h2_.get(), NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS));
  while (!waiting_.empty() && streams_.size() < limit && !goaway_ && !h2_.failed()) {
    Waiting waiting = std::move(waiting_.front());
    waiting_.pop_front();
    Submit(std::move(waiting));
  }
}

void GrpcClientSession::Submit(Waiting&& waiting) {
  const int64_t tag = waiting.tag;
  GrpcClientRequest& request = waiting.request;
  // grpc-timeout: what is left of the deadline now, not when the call packed its request (it may
  // have waited for a stream slot). Past it, the request is dropped unsent; its call fails by its
  // own deadline timer (ERPCTIMEDOUT) as a call the server never saw.
  std::string timeout;
  if (request.deadline != std::chrono::steady_clock::time_point::max()) {
    const auto left = request.deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) {
      unsent_bytes_ -= waiting.unsent_bytes();
      ++counters_.expired_unsent;
      return;
    }
    const int64_t ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    timeout = std::to_string(std::clamp<int64_t>(ms, 1, 99999999)) + "m";
  }
  auto stream = std::make_unique<Stream>();
  stream->tag = tag;
  stream->streaming = request.streaming;
  if (request.streaming) {
    stream->out = std::move(waiting.sent);
    stream->send_closed = waiting.send_closed;
  } else {
    char prefix[kMessagePrefixSize];
    EncodeMessagePrefix(request.gzip, static_cast<uint32_t>(request.message.size()), prefix);
    stream->out.Append(std::string_view(prefix, sizeof(prefix)));
    stream->out.Append(std::move(request.message));
  }

  static const std::string kMethod = ":method", kPost = "POST", kScheme = ":scheme",
                           kHttp = "http", kPath = ":path", kAuthority = ":authority", kTe = "te",
                           kTrailers = "trailers", kContentType = "content-type",
                           kGrpc = "application/grpc", kAccept = "grpc-accept-encoding",
                           kAccepted = "identity,gzip", kEncoding = "grpc-encoding",
                           kGzip = "gzip", kTimeout = "grpc-timeout", kAgent = "user-agent",
                           kArenarpc = "arenarpc";
  std::vector<nghttp2_nv> nv = {Nv(kMethod, kPost),        Nv(kScheme, kHttp),
                                Nv(kPath, request.path),   Nv(kAuthority, request.authority),
                                Nv(kTe, kTrailers),        Nv(kContentType, kGrpc),
                                Nv(kAgent, kArenarpc),     Nv(kAccept, kAccepted)};
  if (request.gzip) nv.push_back(Nv(kEncoding, kGzip));
  if (!timeout.empty()) nv.push_back(Nv(kTimeout, timeout));
  for (auto& [name, value] : request.metadata) {
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (!IsReservedHeader(name)) nv.push_back(Nv(name, value));
  }
  nghttp2_data_provider body{};
  body.read_callback = &Callbacks::ReadBody;
  const int32_t id = nghttp2_submit_request(h2_.get(), nullptr, nv.data(), nv.size(), &body, nullptr);
  if (id < 0) {  // e.g. stream ids exhausted: the request never left
    unsent_bytes_ -= stream->out.size();
    GrpcClientResponse response;
    response.tag = tag;
    response.unprocessed = true;
    response.error_code = EFAILEDSOCKET;
    response.error_text = std::string("HTTP/2 request: ") + nghttp2_strerror(id);
    ready_.push_back(std::move(response));
    return;
  }
  ++counters_.streams_started;
  stream->id = id;
  stream_of_tag_[tag] = id;
  streams_[id] = std::move(stream);
}

void GrpcClientSession::Cancel(int64_t tag) {
  auto it = stream_of_tag_.find(tag);
  if (it == stream_of_tag_.end()) {
    auto waiting = std::find_if(waiting_.begin(), waiting_.end(),
                                [tag](const Waiting& entry) { return entry.tag == tag; });
    if (waiting != waiting_.end()) {
      unsent_bytes_ -= waiting->unsent_bytes();
      waiting_.erase(waiting);
    }
    std::erase_if(ready_, [tag](const GrpcClientResponse& r) { return r.tag == tag; });
    std::erase_if(messages_, [tag](const GrpcStreamMessage& m) { return m.tag == tag; });
    return;
  }
  std::erase_if(messages_, [tag](const GrpcStreamMessage& m) { return m.tag == tag; });
  Stream* stream = Find(it->second);
  stream_of_tag_.erase(it);
  if (stream == nullptr || stream->canceled) return;
  stream->canceled = true;
  if (!stream->streaming) response_bytes_ -= stream->body.size();
  stream->body.clear();
  stream->unread = 0;  // its messages are dropped with it
  nghttp2_session_consume_stream(h2_.get(), stream->id, stream->unreleased);
  stream->unreleased = 0;
  ++counters_.streams_reset;
  nghttp2_submit_rst_stream(h2_.get(), NGHTTP2_FLAG_NONE, stream->id, NGHTTP2_CANCEL);
  GrantWindows();
}

void GrpcClientSession::Abort(Stream& stream, int error_code, std::string text, uint32_t h2_error) {
  stream.response.error_code = error_code;
  stream.response.error_text = std::move(text);
  stream.response.metadata.clear();
  if (!stream.streaming) response_bytes_ -= stream.body.size();
  stream.body.clear();
  nghttp2_session_consume_stream(h2_.get(), stream.id, stream.unreleased);
  stream.unreleased = 0;
  ++counters_.streams_reset;
  nghttp2_submit_rst_stream(h2_.get(), NGHTTP2_FLAG_NONE, stream.id, h2_error);
}

void GrpcClientSession::Finish(Stream& stream, uint32_t h2_error) {
  unsent_bytes_ -= stream.out.size();
  if (!stream.streaming) response_bytes_ -= stream.body.size();
  if (stream.canceled) return;
  stream_of_tag_.erase(stream.tag);
  GrpcClientResponse response = std::move(stream.response);
  response.tag = stream.tag;
  if (response.error_code != 0) {
    // a local limit ended it
  } else if (!stream.ended) {
    if (h2_error == NGHTTP2_REFUSED_STREAM && !stream.headers_seen) {
      response.unprocessed = true;
      response.error_code = EFAILEDSOCKET;
      response.error_text = goaway_ ? "the server sent GOAWAY before taking the call"
                                    : "the server refused the stream (REFUSED_STREAM)";
    } else {
      response.error_code = EFAILEDSOCKET;
      response.error_text = std::string("the gRPC stream was reset (") +
                            nghttp2_http2_strerror(h2_error) + ")";
    }
  } else if (response.grpc_status < 0) {
    response.error_code = ERESPONSE;
    response.error_text = "gRPC response without grpc-status (HTTP status " +
                          std::to_string(stream.http_status) + ")";
  } else if (stream.streaming) {
    if (response.grpc_status == 0 && !stream.body.empty()) {
      response.error_code = ERESPONSE;
      response.error_text = "gRPC stream ended inside a response message";
    }
  } else if (response.grpc_status == 0) {
    if (stream.body.size() < kMessagePrefixSize ||
        stream.body.size() != kMessagePrefixSize + DecodeMessageLength(stream.body)) {
      response.error_code = ERESPONSE;
      response.error_text = stream.body.empty() ? "gRPC response with status OK but no message"
                                                : "gRPC response ended inside its message";
    } else {
      unsigned char flag = 0;
      stream.body.CopyTo(&flag, 1);
      response.compressed = flag != 0;
      stream.body.PopFront(kMessagePrefixSize);
      response.message = std::move(stream.body);
      response_bytes_ += response.message.size();  // until popped
    }
  }
  stream.body.clear();
  if (response.error_code != 0) response.metadata.clear();
  ready_.push_back(std::move(response));
}

void GrpcClientSession::FailWaiting(std::string_view why) {
  for (Waiting& waiting : waiting_) {
    unsent_bytes_ -= waiting.unsent_bytes();
    GrpcClientResponse response;
    response.tag = waiting.tag;
    response.unprocessed = true;
    response.error_code = EFAILEDSOCKET;
    response.error_text = std::string(why);
    ready_.push_back(std::move(response));
  }
  waiting_.clear();
}

size_t GrpcClientSession::HeldBy(const Stream& stream) {
  return stream.canceled || stream.response.error_code != 0 ? 0
                                                            : stream.body.size() + stream.unread;
}

size_t GrpcClientSession::unconsumed_bytes() const {
  size_t held = response_bytes_;
  for (const auto& [id, stream] : streams_) {
    if (stream->streaming) held += HeldBy(*stream);
  }
  return held;
}

void GrpcClientSession::GrantWindows() {
  const bool under_budget = unconsumed_bytes() < limits_.response_bytes_budget;
  bool first = true;  // the oldest unary response being received always progresses
  for (auto& [id, stream] : streams_) {
    const size_t held = HeldBy(*stream);
    // Consumed bytes give their connection window back at once, held ones as the rules allow.
    if (stream->connection_unreleased > held) {
      ReturnConnection(*stream, stream->connection_unreleased - held);
    }
    const bool oldest_unary = first && !stream->streaming && held > 0;
    if (stream->connection_unreleased > 0 && (under_budget || oldest_unary)) {
      ReturnConnection(*stream, stream->connection_unreleased);
    }
    if (stream->body.empty() || stream->streaming) continue;
    if (stream->unreleased > 0 && (first || response_bytes_ < limits_.response_bytes_budget)) {
      nghttp2_session_consume_stream(h2_.get(), id, stream->unreleased);
      stream->unreleased = 0;
    }
    first = false;
  }
}

void GrpcClientSession::ReturnConnection(Stream& stream, size_t bytes) {
  if (bytes == 0) return;
  stream.connection_unreleased -= bytes;
  nghttp2_session_consume_connection(h2_.get(), bytes);  // WINDOW_UPDATE at half the window
}

void GrpcClientSession::GrowWindows(uint32_t window) {
  ++counters_.window_growths;
  Check(GrowReceiveWindows(h2_.get(), window, &stream_window_, &connection_window_),
        "window growth");
}

bool GrpcClientSession::Receive(std::string_view input) {
  if (h2_.failed()) return false;
  const ssize_t rv = h2_.Feed(input);
  if (!Check(static_cast<int>(std::min<ssize_t>(rv, 0)), "HTTP/2")) return false;
  StartWaiting();
  return true;
}

bool GrpcClientSession::Receive(const net::BufferChain& input) {
  return Nghttp2Core::ForEachSpan(input, [this](std::string_view span) { return Receive(span); });
}

bool GrpcClientSession::PopResponse(GrpcClientResponse* response) {
  if (ready_.empty()) return false;
  *response = std::move(ready_.front());
  ready_.pop_front();
  response_bytes_ -= response->message.size();
  GrantWindows();
  return true;
}

void GrpcClientSession::SplitMessages(Stream& stream) {
  while (stream.response.error_code == 0 && stream.body.size() >= kMessagePrefixSize) {
    const uint32_t length = DecodeMessageLength(stream.body);
    if (length > limits_.max_message_bytes) {
      ++counters_.message_limit_hits;
      Abort(stream, ERESPONSE,
            "gRPC response message of " + std::to_string(length) +
                " bytes is larger than max_body_size=" + std::to_string(limits_.max_message_bytes),
            NGHTTP2_CANCEL);
      return;
    }
    if (stream.body.size() < kMessagePrefixSize + length) return;
    GrpcStreamMessage message;
    message.tag = stream.tag;
    unsigned char flag = 0;
    stream.body.CopyTo(&flag, 1);
    message.compressed = flag != 0;
    message.encoding = stream.response.encoding;
    message.wire_bytes = kMessagePrefixSize + length;
    stream.body.PopFront(kMessagePrefixSize);
    stream.body.CutFront(length, &message.message);
    stream.unread += message.wire_bytes;
    messages_.push_back(std::move(message));
  }
}

GrpcClientSession::Waiting* GrpcClientSession::FindWaiting(int64_t tag) {
  for (Waiting& waiting : waiting_) {
    if (waiting.tag == tag) return &waiting;
  }
  return nullptr;
}

bool GrpcClientSession::Send(int64_t tag, net::BufferChain message, bool gzip) {
  char prefix[kMessagePrefixSize];
  EncodeMessagePrefix(gzip, static_cast<uint32_t>(message.size()), prefix);
  const size_t bytes = kMessagePrefixSize + message.size();
  net::BufferChain* out = nullptr;
  if (auto it = stream_of_tag_.find(tag); it != stream_of_tag_.end()) {
    Stream* stream = Find(it->second);
    if (stream == nullptr || !stream->streaming || stream->send_closed || stream->canceled) {
      return false;
    }
    out = &stream->out;
  } else if (Waiting* waiting = FindWaiting(tag);
             waiting != nullptr && waiting->request.streaming && !waiting->send_closed) {
    out = &waiting->sent;
  } else {
    return false;
  }
  out->Append(std::string_view(prefix, sizeof(prefix)));
  out->Append(std::move(message));
  unsent_bytes_ += bytes;
  if (auto it = stream_of_tag_.find(tag); it != stream_of_tag_.end()) {
    nghttp2_session_resume_data(h2_.get(), it->second);
  }
  return true;
}

bool GrpcClientSession::CloseSend(int64_t tag) {
  if (auto it = stream_of_tag_.find(tag); it != stream_of_tag_.end()) {
    Stream* stream = Find(it->second);
    if (stream == nullptr || !stream->streaming || stream->send_closed) return false;
    stream->send_closed = true;
    nghttp2_session_resume_data(h2_.get(), it->second);
    return true;
  }
  Waiting* waiting = FindWaiting(tag);
  if (waiting == nullptr || !waiting->request.streaming || waiting->send_closed) return false;
  waiting->send_closed = true;
  return true;
}

size_t GrpcClientSession::unsent_bytes(int64_t tag) const {
  if (auto it = stream_of_tag_.find(tag); it != stream_of_tag_.end()) {
    auto stream = streams_.find(it->second);
    return stream == streams_.end() ? 0 : stream->second->out.size();
  }
  for (const Waiting& waiting : waiting_) {
    if (waiting.tag == tag) return waiting.sent.size();
  }
  return 0;
}

bool GrpcClientSession::PopMessage(GrpcStreamMessage* message) {
  if (messages_.empty()) return false;
  *message = std::move(messages_.front());
  messages_.pop_front();
  return true;
}

void GrpcClientSession::Release(int64_t tag, size_t wire_bytes) {
  auto it = stream_of_tag_.find(tag);
  if (it == stream_of_tag_.end()) return;
  Stream* stream = Find(it->second);
  if (stream == nullptr) return;
  stream->unread -= std::min(stream->unread, wire_bytes);
  if (stream->unread == 0 && stream->unreleased > 0) {
    nghttp2_session_consume_stream(h2_.get(), stream->id, stream->unreleased);
    stream->unreleased = 0;
  }
  GrantWindows();
}

std::vector<int64_t> GrpcClientSession::TakeDrained() {
  std::vector<int64_t> drained;
  drained.swap(drained_);
  return drained;
}

std::vector<int64_t> GrpcClientSession::TakeStarted() {
  std::vector<int64_t> started;
  started.swap(started_);
  return started;
}

void GrpcClientSession::TakeOutput(net::BufferChain* out) {
  StartWaiting();
  if (const int rv = h2_.Drain(out); rv < 0) Check(rv, "HTTP/2 send");
}

bool GrpcClientSession::Idle() const {
  return streams_.empty() && waiting_.empty() && ready_.empty() && messages_.empty() &&
         !h2_.want_write();
}

}  // namespace arenarpc::protocol::h2
