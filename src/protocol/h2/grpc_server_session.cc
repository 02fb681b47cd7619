#include "protocol/h2/grpc_server_session.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <array>
#include <charconv>

#include "protocol/h2/grpc_wire.h"
#include "protocol/h2/nghttp2_glue.h"
#include "protocol/http/connect_wire.h"
#include "protocol/http/grpc_web_wire.h"
#include "util/base64.h"

namespace arenarpc::protocol::h2 {

namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

constexpr std::string_view kGrpcType = "application/grpc";
// Every response's headers carry it, after :status and content-type.
constexpr std::string_view kAcceptEncodingName = "grpc-accept-encoding";

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// The media type alone: parameters (";charset=utf-8") and spaces aside.
std::string_view MediaType(std::string_view type) {
  type = type.substr(0, type.find(';'));
  while (!type.empty() && type.back() == ' ') type.remove_suffix(1);
  return type;
}

// What a POST's content-type asks for (docs/grpc.md; browsers: docs/http.md, "Browsers"); false:
// none of them. *json: Connect with JSON messages.
bool KindOf(std::string_view content_type, WireKind* kind, bool* json) {
  *json = false;
  std::string_view type = MediaType(content_type);
  if (!StartsWith(type, "application/")) return false;
  type.remove_prefix(12);
  if (StartsWith(type, "grpc")) {
    type.remove_prefix(4);
    if (type.empty() || type[0] == '+') {
      *kind = WireKind::kGrpc;
      return true;
    }
    const bool text = StartsWith(type, "-web-text");
    if (!text && !StartsWith(type, "-web")) return false;
    type.remove_prefix(text ? 9 : 4);
    if (!type.empty() && type != "+proto") return false;
    *kind = text ? WireKind::kGrpcWebText : WireKind::kGrpcWeb;
    return true;
  }
  const bool stream = StartsWith(type, "connect+");
  if (stream) type.remove_prefix(8);
  if (type != "proto" && type != "json") return false;
  *json = type == "json";
  *kind = stream ? WireKind::kConnectStream : WireKind::kConnect;
  return true;
}

// Header fields handed to nghttp2: up to eight (a reply's usual few) need no allocation of ours.
class FieldArray {
 public:
  explicit FieldArray(size_t capacity) {
    if (capacity > few_.size()) many_.resize(capacity);
  }
  // A field nghttp2 copies (and lower-cases), for names and values that may go before it sends.
  void Add(std::string_view name, std::string_view value) {
    Put(name, value, NGHTTP2_NV_FLAG_NONE);
  }
  // A field of string literals (lower case), which nghttp2 reads in place when it packs the
  // frame: no copy, no lower-casing, byte for byte the same field.
  void AddLiteral(std::string_view name, std::string_view value) {
    Put(name, value, NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE);
  }
  nghttp2_nv* data() { return many_.empty() ? few_.data() : many_.data(); }
  size_t size() const { return size_; }

 private:
  void Put(std::string_view name, std::string_view value, uint8_t flags) {
    data()[size_++] = nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                                 reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())),
                                 name.size(), value.size(), flags};
  }
  std::array<nghttp2_nv, 8> few_;
  std::vector<nghttp2_nv> many_;
  size_t size_ = 0;
};

// The reply's content-type for a request of `kind`.
std::string_view ReplyType(WireKind kind, bool json) {
  switch (kind) {
    case WireKind::kGrpc:
      return kGrpcType;
    case WireKind::kGrpcWeb:
      return "application/grpc-web+proto";
    case WireKind::kGrpcWebText:
      return "application/grpc-web-text+proto";
    case WireKind::kConnect:
      return json ? "application/json" : "application/proto";
    case WireKind::kConnectStream:
      return json ? "application/connect+json" : "application/connect+proto";
    case WireKind::kPreflight:
      break;
  }
  return "text/plain";
}

// grpc-web's trailers frame (flag 0x80, "name:value" lines) appended to `out`.
void AppendTrailersFrame(const Headers& fields, net::BufferChain* out) {
  std::string frame;
  AppendGrpcWebTrailerFields(fields, &frame);
  out->Append(frame);
}

constexpr size_t kCopiedMessageBytes = 1024;

}  // namespace

// A std::deque made on the first push: libstdc++'s allocates its map and a 512-byte block as it
// is constructed, and a unary stream, which never queues a message, would pay for both (two
// allocations and their frees: ~500 instructions a call as measured).
template <typename T>
class LazyQueue {
 public:
  bool empty() const noexcept { return items_ == nullptr || items_->empty(); }
  size_t size() const noexcept { return items_ == nullptr ? 0 : items_->size(); }
  T& front() { return items_->front(); }
  void push_back(T&& item) {
    if (items_ == nullptr) items_ = std::make_unique<std::deque<T>>();
    items_->push_back(std::move(item));
  }
  void pop_front() { items_->pop_front(); }
  void clear() noexcept {
    if (items_ != nullptr) items_->clear();
  }

 private:
  std::unique_ptr<std::deque<T>> items_;
};

struct GrpcServerSession::Stream {
  int32_t id = 0;
  GrpcRequest request;
  std::string method;        // ":method"
  std::string content_type;
  size_t header_bytes = 0;   // as SETTINGS_MAX_HEADER_LIST_SIZE counts them
  bool headers_too_large = false;
  net::BufferChain body;     // DATA so far (prefix + message)
  size_t unreleased = 0;     // DATA bytes whose stream window was not reopened yet
  size_t connection_unreleased = 0;  // ... whose connection window was not given back yet
  bool complete = false;     // in ready_, or refused: nothing more is read into it
  bool responded = false;
  bool reset_after_send = false;  // answered before the client ended its side
  net::BufferChain out;      // response bytes for DATA frames
  Headers trailers;
  bool ok_trailers = false;  // gRPC's unary OK: the trailers are grpc-status 0 (before `trailers`)
  WireKind kind = WireKind::kGrpc;
  bool json = false;  // Connect with JSON messages
  // The body is read whole before it is decoded (Connect unary, grpc-web-text, a preflight).
  bool whole_body = false;
  int64_t content_length = -1;   // content-length, when the client sent one
  std::string content_encoding;  // Connect's: content-encoding (unary), connect-content-encoding
  std::string connect_encoding;
  std::string origin;  // the Origin header (CORS): replies carry the owner's OriginHeaders
  int64_t connect_timeout_ms = -2;  // connect-timeout-ms: -2 none, -1 not a number
  // The trailers go in the body (every kind but gRPC's): its last DATA frame ends the stream.
  bool TrailersInBody() const { return kind != WireKind::kGrpc; }
  // Streaming calls
  struct InMessage {
    bool compressed = false;
    net::BufferChain bytes;
  };
  bool streaming = false;
  bool finished = false;     // trailers submitted (or the stream was answered / reset)
  bool end_received = false;  // END_STREAM from the client (messages may still wait in body)
  bool input_ended = false;  // every message before END_STREAM is in the inbox, or input broke
  LazyQueue<InMessage> inbox;  // complete messages the call did not take yet
  size_t inbox_bytes = 0;       // their payload + kQueuedMessageOverhead each
  // What one queued message costs beyond its payload: its InMessage in the inbox's deque block
  // plus the allocator's slack (an empty message held ~127 bytes when this was measured).
  static constexpr size_t kQueuedMessageOverhead = sizeof(InMessage) + 16;
};

struct GrpcServerSession::Callbacks {
  static GrpcServerSession& Self(void* user_data) {
    return *static_cast<GrpcServerSession*>(user_data);
  }

  static int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    GrpcServerSession& self = Self(user_data);
    auto stream = std::make_unique<Stream>();
    stream->id = frame->hd.stream_id;
    stream->request.stream_id = frame->hd.stream_id;
    self.header_stream_ = stream.get();
    self.streams_[frame->hd.stream_id] = std::move(stream);
    ++self.incomplete_;
    // The client may assume more than 65,535 before our SETTINGS (never less: lowering the
    // window before the client learned it would shrink it twice once the SETTINGS apply).
    if (!self.settings_acked_ && self.limits_.stream_window > NGHTTP2_INITIAL_WINDOW_SIZE) {
      nghttp2_session_set_local_window_size(self.h2_.get(), NGHTTP2_FLAG_NONE,
                                            frame->hd.stream_id,
                                            static_cast<int32_t>(self.limits_.stream_window));
    }
    return 0;
  }

  static int OnHeader(nghttp2_session* session, const nghttp2_frame* frame,
                      const uint8_t* name_bytes,
                      size_t name_size, const uint8_t* value_bytes, size_t value_size, uint8_t,
                      void* user_data) {
    GrpcServerSession& self = Self(user_data);
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    Stream* stream = self.header_stream_ != nullptr && self.header_stream_->id == frame->hd.stream_id
                         ? self.header_stream_
                         : self.Find(frame->hd.stream_id);
    if (stream == nullptr || stream->headers_too_large) return 0;
    stream->header_bytes += name_size + value_size + 32;
    if (stream->header_bytes > self.limits_.max_header_list_bytes) {
      // The temporal failure makes nghttp2 skip the rest of the block (no more field
      // validation: an HPACK bomb costs one field past the limit) and drop any answer but a
      // reset; ENHANCE_YOUR_CALM is RESOURCE_EXHAUSTED to gRPC clients.
      stream->headers_too_large = true;
      stream->request.metadata.clear();
      stream->request.metadata.shrink_to_fit();
      ++self.counters_.header_lists_cut;
      ++self.counters_.refused_streams;
      if (!stream->complete) {
        stream->complete = true;
        --self.incomplete_;
      }
      stream->responded = stream->finished = true;  // the reset is its answer
      nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream->id, NGHTTP2_ENHANCE_YOUR_CALM);
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    const std::string_view name(reinterpret_cast<const char*>(name_bytes), name_size);
    const std::string_view value(reinterpret_cast<const char*>(value_bytes), value_size);
    GrpcRequest& request = stream->request;
    // By the name's length first: most fields then cost one compare (or none) instead of a
    // dozen. Pseudo-headers and the other reserved names (IsReservedHeader) are not metadata:
    // the ones read here are all reserved, and return at once.
    switch (name.size()) {
      case 5:
        if (name == ":path") {
          request.path = value;
          return 0;
        }
        break;
      case 7:
        if (name == ":method") {
          stream->method = value;
          return 0;
        }
        break;
      case 12:
        if (name == "content-type") {
          stream->content_type = value;
          return 0;
        }
        if (name == "grpc-timeout") {
          request.timeout_ms = ParseGrpcTimeoutMs(value);
          return 0;
        }
        break;
      case 13:
        if (name == "grpc-encoding") {
          request.encoding = value == "identity" ? "" : value;
          return 0;
        }
        break;
      case 14:
        if (name == "content-length") {
          int64_t length = 0;
          const char* const last = value.data() + value.size();
          if (const auto [end, error] = std::from_chars(value.data(), last, length);
              error == std::errc() && end == last) {
            stream->content_length = length;
          }
          return 0;
        }
        break;
      case 20:
        if (name == "grpc-accept-encoding") {
          request.accepts_gzip = value.find("gzip") != std::string_view::npos;
          return 0;
        }
        break;
      default:
        break;
    }
    if (IsReservedHeader(name)) return 0;
    switch (name.size()) {  // metadata that also tells the session something (Connect, CORS)
      case 6:
        if (name == "origin") stream->origin = request.origin = value;
        break;
      case 16:
        if (name == "content-encoding") stream->content_encoding = value;
        break;
      case 18:
        if (name == "connect-timeout-ms") {
          int64_t ms = -1;
          const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), ms);
          stream->connect_timeout_ms =
              error == std::errc() && end == value.data() + value.size() && ms >= 0 ? ms : -1;
        }
        break;
      case 24:
        if (name == "connect-content-encoding") stream->connect_encoding = value;
        break;
      default:
        break;
    }
    request.metadata.emplace_back(name, value);
    return 0;
  }

  static int OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    GrpcServerSession& self = Self(user_data);
    const size_t payload =
        frame->hd.type == NGHTTP2_DATA ? frame->hd.length - frame->data.padlen : 0;
    if (!self.CountFrame(frame->hd.type, frame->hd.flags, payload)) {
      return NGHTTP2_ERR_CALLBACK_FAILURE;  // Receive() ends the session
    }
    if (frame->hd.type == NGHTTP2_SETTINGS && (frame->hd.flags & NGHTTP2_FLAG_ACK) != 0) {
      self.settings_acked_ = true;
    }
    if (frame->hd.type == NGHTTP2_PING && (frame->hd.flags & NGHTTP2_FLAG_ACK) != 0) {
      if (const uint32_t window = self.bdp_.OnPingAck(frame->ping.opaque_data)) {
        self.GrowWindows(window);
      }
      return 0;
    }
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
    Stream* stream = self.Find(frame->hd.stream_id);
    if (stream == nullptr) return 0;
    const bool end = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    if (stream->streaming) {
      if (end && !stream->input_ended) self.EndStreamInput(*stream);
      return 0;
    }
    if (stream->complete) return 0;
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
      if (!self.Classify(*stream)) return 0;
      if (!stream->whole_body && self.is_streaming_ && self.is_streaming_(stream->request.path)) {
        self.Open(*stream);
        if (end) self.EndStreamInput(*stream);
        return 0;
      }
    }
    if (end && stream->whole_body) {
      self.CompleteWholeBody(*stream);
      return 0;
    }
    if (end) self.Complete(*stream);
    return 0;
  }

  static int OnDataChunk(nghttp2_session* session, uint8_t, int32_t stream_id,
                         const uint8_t* data, size_t size, void* user_data) {
    GrpcServerSession& self = Self(user_data);
    if (self.bdp_.OnData(size)) self.Check(SubmitBdpProbe(session), "PING");
    Stream* stream = self.Find(stream_id);
    if (stream != nullptr && stream->streaming && !stream->input_ended) {
      stream->connection_unreleased += size;
      self.ReceiveStreamData(*stream, std::string_view(reinterpret_cast<const char*>(data), size));
      return 0;
    }
    if (stream == nullptr || stream->complete) {  // dropped: nothing is held
      nghttp2_session_consume_stream(session, stream_id, size);
      self.connection_unsent_ += size;
      self.FlushConnectionWindow(false);
      return 0;
    }
    stream->unreleased += size;
    stream->connection_unreleased += size;
    self.request_bytes_ += size;
    stream->body.Append(std::string_view(reinterpret_cast<const char*>(data), size));
    const size_t limit = self.limits_.max_message_bytes;
    if (stream->whole_body) {
      if (stream->body.size() > self.WholeBodyLimit(*stream)) {
        self.Refuse(*stream, GrpcStatus::kResourceExhausted,
                    "request body of more than " + std::to_string(self.WholeBodyLimit(*stream)) +
                        " bytes: the server's max_body_size=" + std::to_string(limit));
      }
    } else if (stream->body.size() >= kMessagePrefixSize) {
      const uint32_t length = DecodeMessageLength(stream->body);
      if (length > limit) {
        self.Refuse(*stream, GrpcStatus::kResourceExhausted,
                    "gRPC message of " + std::to_string(length) +
                        " bytes is larger than the server's max_body_size=" +
                        std::to_string(limit));
      } else if (stream->body.size() > kMessagePrefixSize + length) {
        self.Refuse(*stream, GrpcStatus::kUnimplemented,
                    "more than one request message: this method is unary");
      }
    }
    self.GrantWindows();
    return 0;
  }

  static int OnStreamClose(nghttp2_session*, int32_t stream_id, uint32_t, void* user_data) {
    GrpcServerSession& self = Self(user_data);
    auto it = self.streams_.find(stream_id);
    if (it == self.streams_.end()) return 0;
    Stream& stream = *it->second;
    if (!stream.responded || (stream.streaming && !stream.finished)) {
      self.canceled_.push_back(stream_id);
      ++self.counters_.canceled_streams;
    }
    if (!stream.complete) --self.incomplete_;
    self.ReleaseConnection(stream);  // its bytes go with it
    self.request_bytes_ -= stream.body.size() + stream.inbox_bytes;
    self.held_bytes_ -= stream.out.held_bytes();
    if (self.header_stream_ == &stream) self.header_stream_ = nullptr;
    self.streams_.erase(it);
    self.GrantWindows();
    return 0;
  }

  static int OnInvalidFrame(nghttp2_session*, const nghttp2_frame*, int, void* user_data) {
    ++Self(user_data).counters_.invalid_frames;
    return 0;
  }

  static int OnError(nghttp2_session*, int /*lib_error_code*/, const char* message, size_t size,
                     void* user_data) {
    GrpcServerSession& self = Self(user_data);
    self.error_reason_.assign(message, size);  // the last one: a GOAWAY follows its cause
    return 0;
  }

  static int OnFrameSend(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type == NGHTTP2_DATA) ++Self(user_data).work_frames_;  // answers earn frames
    if (frame->hd.type == NGHTTP2_GOAWAY && frame->goaway.error_code != NGHTTP2_NO_ERROR) {
      GrpcServerSession& self = Self(user_data);
      ++self.counters_.connection_errors;
      if (self.h2_.error().empty()) {
        std::string error = std::string("GOAWAY ") + nghttp2_http2_strerror(frame->goaway.error_code);
        if (!self.error_reason_.empty()) error += " (" + self.error_reason_ + ")";
        self.h2_.set_error(std::move(error));
      }
      return 0;
    }
    if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) return 0;
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
    Stream* stream = Self(user_data).Find(frame->hd.stream_id);
    if (stream != nullptr && stream->reset_after_send &&
        nghttp2_session_get_stream_remote_close(session, frame->hd.stream_id) == 0) {
      nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                                NGHTTP2_NO_ERROR);
    }
    return 0;
  }

  static ssize_t ReadBody(nghttp2_session* session, int32_t stream_id, uint8_t* buf, size_t length,
                          uint32_t* data_flags, nghttp2_data_source*, void* user_data) {
    GrpcServerSession& self = Self(user_data);
    Stream* stream = self.Find(stream_id);
    if (stream == nullptr) {
      *data_flags |= NGHTTP2_DATA_FLAG_EOF;
      return 0;
    }
    if (stream->out.empty() && stream->streaming && !stream->finished) {
      return NGHTTP2_ERR_DEFERRED;  // SendMessage / FinishStream resume it
    }
    const size_t held_before = stream->out.held_bytes();
    const size_t n = stream->out.CopyTo(buf, length);
    stream->out.PopFront(n);
    self.held_bytes_ -= held_before - stream->out.held_bytes();
    self.data_bytes_sent_ += n;
    if (stream->streaming && n > 0 && (self.drained_.empty() || self.drained_.back() != stream_id)) {
      self.drained_.push_back(stream_id);
    }
    if (stream->out.empty() && (!stream->streaming || stream->finished) &&
        stream->TrailersInBody()) {
      *data_flags |= NGHTTP2_DATA_FLAG_EOF;  // the trailers frame was the body's last bytes
    } else if (stream->out.empty() && (!stream->streaming || stream->finished)) {
      *data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM | NGHTTP2_DATA_FLAG_EOF;
      FieldArray nv(stream->trailers.size() + 1);
      if (stream->ok_trailers) nv.AddLiteral("grpc-status", "0");
      for (const auto& [name, value] : stream->trailers) nv.Add(name, value);
      if (nghttp2_submit_trailer(session, stream_id, nv.data(), nv.size()) != 0) {
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // resets the stream
      }
    }
    return static_cast<ssize_t>(n);
  }
};

std::string_view GrpcServerSession::ContentType(const Stream& stream) {
  return ReplyType(stream.kind, stream.json);
}

SessionCallbacks GrpcServerSession::CallbackTable() {
  SessionCallbacks callbacks = CommonCallbacks<Callbacks>();
  callbacks.on_invalid_frame_recv = &Callbacks::OnInvalidFrame;
  callbacks.on_error = &Callbacks::OnError;
  return callbacks;
}

// Stream windows reopen as the budget allows (GrantWindows): the memory bound. A flood or a bad
// preface fails the core: GOAWAY, and nothing more is read.
GrpcServerSession::GrpcServerSession(const Limits& limits)
    : limits_(limits),
      stream_window_(limits.stream_window),
      connection_window_(std::max<uint32_t>(limits.connection_window, 65535)),
      bdp_(std::min(stream_window_, connection_window_), limits.max_window),
      h2_(Nghttp2Core::Side::kServer, CallbackTable(),
          {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, limits.max_concurrent_streams},
           {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, limits.stream_window},
           {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, limits.max_frame_size},
           {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE,
            static_cast<uint32_t>(std::min<size_t>(limits.max_header_list_bytes, UINT32_MAX))}},
          limits.connection_window, this) {}

GrpcServerSession::~GrpcServerSession() = default;

bool GrpcServerSession::Receive(std::string_view input) {
  if (h2_.failed()) return false;
  now_ = std::chrono::steady_clock::now();
  const ssize_t rv = h2_.Feed(input);
  if (rv < 0 && !flood_.empty()) {
    ++counters_.floods;
    h2_.Terminate(flood_, NGHTTP2_ENHANCE_YOUR_CALM);
    return false;
  }
  if (!Check(static_cast<int>(std::min<ssize_t>(rv, 0)), "HTTP/2")) return false;
  return true;
}

bool GrpcServerSession::ReceiveSome(net::BufferChain& input, size_t max_bytes) {
  size_t fed = 0;
  bool ok = true;
  for (size_t i = 0; ok && i < input.span_count() && fed < max_bytes; ++i) {
    const std::span<const char> span = input.span(i);
    const size_t n = std::min(span.size(), max_bytes - fed);
    ok = Receive(std::string_view(span.data(), n));
    fed += n;
  }
  input.PopFront(fed);
  return ok;
}

bool GrpcServerSession::CountFrame(uint8_t type, uint8_t flags, size_t payload) {
  switch (type) {
    case NGHTTP2_DATA:
      if (payload > 0) {
        consecutive_empty_ = 0;
        ++work_frames_;
      } else if ((flags & NGHTTP2_FLAG_END_STREAM) == 0 &&
                 ++consecutive_empty_ > limits_.max_consecutive_empty_frames) {
        flood_ = "flood: " + std::to_string(consecutive_empty_) +
                 " DATA frames in a row without payload or END_STREAM (the limit is " +
                 std::to_string(limits_.max_consecutive_empty_frames) + ")";
        return false;
      }
      return true;
    case NGHTTP2_HEADERS:
      consecutive_empty_ = 0;
      ++work_frames_;
      return true;
    case NGHTTP2_WINDOW_UPDATE:
    case NGHTTP2_PING:
    case NGHTTP2_SETTINGS:
    case NGHTTP2_RST_STREAM:
    case NGHTTP2_PRIORITY:
      break;
    default:
      return true;
  }
  if (now_ - window_start_ >= std::chrono::seconds(1)) {
    window_start_ = now_;
    control_frames_ = 0;
    work_frames_ = 0;
  }
  const uint64_t allowed = limits_.max_control_frames_per_second +
                           uint64_t{limits_.max_control_frames_per_work} * work_frames_;
  if (++control_frames_ <= allowed) return true;
  flood_ = "flood: " + std::to_string(control_frames_) +
           " WINDOW_UPDATE/PING/SETTINGS/RST_STREAM/PRIORITY frames within a second for " +
           std::to_string(work_frames_) + " frames of requests and responses (the limit is " +
           std::to_string(limits_.max_control_frames_per_second) + " + " +
           std::to_string(limits_.max_control_frames_per_work) + " per such frame)";
  return false;
}

bool GrpcServerSession::Receive(const net::BufferChain& input) {
  return Nghttp2Core::ForEachSpan(input, [this](std::string_view span) { return Receive(span); });
}

bool GrpcServerSession::PopRequest(GrpcRequest* request) {
  while (!ready_.empty()) {
    // Moved once, straight into *request (which keeps the last request when none is popped).
    GrpcRequest& next = ready_.front();
    request_bytes_ -= next.held;
    Stream* stream = Find(next.stream_id);
    if (stream == nullptr) {  // reset by the client meanwhile
      ready_.pop_front();
      GrantWindows();
      continue;
    }
    if (!next.streaming) ReleaseConnection(*stream);  // the call has them
    *request = std::move(next);
    ready_.pop_front();
    GrantWindows();
    return true;
  }
  return false;
}

std::vector<int32_t> GrpcServerSession::TakeCanceled() {
  std::vector<int32_t> canceled;
  canceled.swap(canceled_);
  return canceled;
}

GrpcServerSession::Stream* GrpcServerSession::Find(int32_t stream_id) {
  auto it = streams_.find(stream_id);
  return it == streams_.end() ? nullptr : it->second.get();
}

void GrpcServerSession::ReleaseStream(Stream& stream) {
  if (stream.unreleased == 0) return;
  nghttp2_session_consume_stream(h2_.get(), stream.id, stream.unreleased);
  stream.unreleased = 0;
}

void GrpcServerSession::ReleaseConnection(Stream& stream) {
  if (stream.connection_unreleased == 0) return;
  connection_unsent_ += stream.connection_unreleased;
  stream.connection_unreleased = 0;
  FlushConnectionWindow(false);
}

void GrpcServerSession::FlushConnectionWindow(bool now) {
  // As nghttp2 batches its own: a WINDOW_UPDATE once half the window is given back.
  if (connection_unsent_ == 0 || (!now && connection_unsent_ < connection_window_ / 2)) {
    return;
  }
  nghttp2_submit_window_update(h2_.get(), NGHTTP2_FLAG_NONE, 0,
                               static_cast<int32_t>(connection_unsent_));
  connection_unsent_ = 0;
}

void GrpcServerSession::GrowWindows(uint32_t window) {
  ++counters_.window_growths;
  Check(GrowReceiveWindows(h2_.get(), window, &stream_window_, &connection_window_),
        "window growth");
}

void GrpcServerSession::GrantWindows() {
  const bool under_budget = request_bytes_ < limits_.request_bytes_budget;
  bool oldest = ready_.empty();  // nothing to pop: the oldest unfinished stream must progress
  Stream* turn = nullptr;        // that stream
  for (auto& [id, stream] : streams_) {
    bool progressing = !stream->complete;  // a unary request in progress
    if (stream->streaming) {
      // A streaming call's window reopens only while no message of it waits for the call; only
      // one with a message in progress takes the oldest stream's turn.
      progressing = !stream->input_ended && stream->inbox.empty() &&
                    (!stream->body.empty() || stream->unreleased > 0);
    }
    if (under_budget || (oldest && progressing)) ReleaseConnection(*stream);
    if (!progressing) continue;
    if (oldest || under_budget) ReleaseStream(*stream);
    if (oldest) turn = stream.get();
    oldest = false;
  }
  if (turn != nullptr && !under_budget) KeepTheOldestGoing(*turn);
}

// The client chooses which stream its connection window goes to: it may have spent it all on
// streams that get none back while the session holds the budget, and then the oldest one could
// never complete. The connection window it needs is given back now, and if the bytes of other
// streams hold it, the newest unfinished unary requests are refused (RST_STREAM REFUSED_STREAM:
// not processed, the client may send them again) until it fits.
void GrpcServerSession::KeepTheOldestGoing(Stream& oldest) {
  size_t need = kMessagePrefixSize;
  if (oldest.whole_body) {  // not enveloped (or base64): what content-length says, or a byte
    need = oldest.content_length > 0 ? static_cast<size_t>(oldest.content_length)
                                     : oldest.body.size() + 1;
  } else if (oldest.body.size() >= kMessagePrefixSize) {
    need += DecodeMessageLength(oldest.body);
  }
  need = need > oldest.body.size() ? need - oldest.body.size() : 0;
  auto available = [&] {
    return static_cast<size_t>(
        std::max<int32_t>(0, nghttp2_session_get_local_window_size(h2_.get())));
  };
  if (need == 0 || available() >= need) return;
  FlushConnectionWindow(true);
  for (auto it = streams_.rbegin(); it != streams_.rend() && available() < need; ++it) {
    Stream& stream = *it->second;
    if (&stream == &oldest || stream.complete || stream.connection_unreleased == 0) continue;
    ++counters_.refused_streams;
    stream.complete = true;
    --incomplete_;
    stream.responded = stream.finished = true;  // the reset is its answer
    request_bytes_ -= stream.body.size();
    stream.body.clear();
    stream.request.metadata.clear();
    ReleaseStream(stream);
    ReleaseConnection(stream);
    FlushConnectionWindow(true);
    nghttp2_submit_rst_stream(h2_.get(), NGHTTP2_FLAG_NONE, stream.id, NGHTTP2_REFUSED_STREAM);
  }
}

void GrpcServerSession::Complete(Stream& stream) {
  stream.complete = true;
  --incomplete_;
  GrpcRequest& request = stream.request;
  if (stream.body.size() < kMessagePrefixSize ||
      stream.body.size() != kMessagePrefixSize + DecodeMessageLength(stream.body)) {
    stream.complete = false;  // Refuse() counts it
    ++incomplete_;
    Refuse(stream, GrpcStatus::kInternal,
           stream.body.empty() ? "the request stream ended without a message"
                               : "the request stream ended inside a message");
    return;
  }
  unsigned char flag = 0;
  stream.body.CopyTo(&flag, 1);
  request.compressed = flag != 0;
  stream.body.PopFront(kMessagePrefixSize);
  request.message = std::move(stream.body);
  stream.body.clear();
  request.held = kMessagePrefixSize + request.message.size();
  ready_.push_back(std::move(request));
}

bool GrpcServerSession::Classify(Stream& stream) {
  GrpcRequest& request = stream.request;
  if (stream.method == "POST" && stream.content_type == kGrpcType) {
    // gRPC's own content-type, as its clients send it: what KindOf() would say, without the
    // parsing every browser protocol needs.
    stream.kind = request.kind = WireKind::kGrpc;
    stream.json = request.json = false;
    stream.whole_body = false;
    return true;
  }
  bool served = false;
  if (stream.method == "POST") {
    served = KindOf(stream.content_type, &stream.kind, &stream.json);
  } else if (stream.method == "OPTIONS") {
    stream.kind = WireKind::kPreflight;
    served = true;
  } else if (const size_t mark = request.path.find('?');
             stream.method == "GET" && mark != std::string::npos &&
             IsConnectGetQuery(std::string_view(request.path).substr(mark + 1))) {
    // A Connect unary GET: its message in the query (within the header list's bound).
    stream.kind = WireKind::kConnect;
    request.kind = stream.kind;
    request.get = true;
    ConnectGetQuery query;
    std::string error;
    const bool parsed =
        ParseConnectGetQuery(std::string_view(request.path).substr(mark + 1), &query, &error);
    request.path.resize(mark);
    if (!parsed) {
      Refuse(stream, GrpcStatus::kInvalidArgument, error);
      return false;
    }
    stream.json = query.json;
    stream.content_encoding = std::move(query.compression);
    request_bytes_ += query.message.size();
    stream.body.Append(query.message);
    served = true;
  }
  if (!served) {
    Refuse(stream, GrpcStatus::kUnimplemented,
           "this port serves gRPC over HTTP/2: POST with content-type application/grpc "
           "(grpc-web: application/grpc-web[-text][+proto]; Connect: application/proto|json, "
           "application/connect+proto|json)");
    return false;
  }
  request.kind = stream.kind;
  request.json = stream.json;
  stream.whole_body = stream.kind == WireKind::kConnect ||
                      stream.kind == WireKind::kGrpcWebText || stream.kind == WireKind::kPreflight;
  if (stream.kind == WireKind::kGrpc) return true;
  std::erase_if(request.metadata,
                [](const auto& field) { return IsWebTransportHeader(field.first); });
  if (stream.kind != WireKind::kConnect && stream.kind != WireKind::kConnectStream) return true;
  request.accepts_gzip = false;  // Connect's replies go out uncompressed
  const std::string& encoding =
      stream.kind == WireKind::kConnect ? stream.content_encoding : stream.connect_encoding;
  request.encoding = encoding == "identity" ? std::string() : encoding;
  if (stream.connect_timeout_ms == -1) {
    Refuse(stream, GrpcStatus::kInvalidArgument,
           "connect-timeout-ms is not a number of milliseconds >= 0");
    return false;
  }
  if (stream.connect_timeout_ms > 0) request.timeout_ms = stream.connect_timeout_ms;
  return true;
}

size_t GrpcServerSession::WholeBodyLimit(const Stream& stream) const {
  switch (stream.kind) {
    case WireKind::kConnect:
      return limits_.max_message_bytes;
    case WireKind::kGrpcWebText:  // base64 of an envelope, padding inside allowed for
      return (limits_.max_message_bytes + kMessagePrefixSize + 2) / 3 * 4 + 1024;
    default:
      return 0;
  }
}

void GrpcServerSession::CompleteWholeBody(Stream& stream) {
  GrpcRequest& request = stream.request;
  const bool streaming = is_streaming_ && is_streaming_(request.path);
  if (stream.kind == WireKind::kGrpcWebText) {  // decoded, then a grpc-web body
    std::string bytes = stream.body.ToString();
    size_t bad_at = 0;
    if (!util::DecodeBase64InPlace(&bytes, &bad_at)) {
      Refuse(stream, GrpcStatus::kInvalidArgument,
             "grpc-web-text body is not base64 (at byte " + std::to_string(bad_at) + ")");
      return;
    }
    request_bytes_ -= stream.body.size() - bytes.size();
    stream.body.clear();
    stream.body.Append(bytes);
    stream.whole_body = false;
    if (streaming) {
      Open(stream);
      EndStreamInput(stream);
    } else {
      Complete(stream);
    }
    return;
  }
  if (stream.kind == WireKind::kConnect && streaming) {
    Refuse(stream, GrpcStatus::kInvalidArgument,
           request.path + " is a streaming rpc: Connect calls it with application/connect+proto "
                          "or application/connect+json");
    return;
  }
  stream.complete = true;
  --incomplete_;
  request.compressed = !request.encoding.empty() && !stream.body.empty();
  request.message = std::move(stream.body);
  stream.body.clear();
  request.held = request.message.size();
  ready_.push_back(std::move(request));
}

void GrpcServerSession::AppendOut(Stream& stream, net::BufferChain&& bytes) {
  const size_t held_before = stream.out.held_bytes();
  if (stream.kind == WireKind::kGrpcWebText) {
    stream.out.Append(util::EncodeBase64(bytes.ToString(), /*pad=*/true));
  } else {
    stream.out.Append(std::move(bytes));
  }
  held_bytes_ += stream.out.held_bytes() - held_before;
}

void GrpcServerSession::ConnectEnd(Stream& stream, GrpcStatus status, std::string_view text,
                                   const Headers& metadata, const Headers& trailers,
                                   std::string_view details) {
  stream.finished = true;
  Headers headers;
  std::string body;
  if (stream.kind == WireKind::kConnectStream) {
    headers = {{":status", "200"}, {"content-type", std::string(ContentType(stream))}};
    AppendEnvelope(kConnectEndStreamFlag,
                   ConnectEndStreamJson(static_cast<int>(status), text, trailers, details), &body);
  } else {
    headers = {{":status", std::to_string(HttpStatusForConnectCode(static_cast<int>(status)))},
               {"content-type", "application/json"}};
    body = ConnectErrorJson(static_cast<int>(status), text, details);
  }
  for (const auto& [name, value] : metadata) {
    if (!IsReservedHeader(name)) headers.emplace_back(name, value);
  }
  net::BufferChain bytes;
  bytes.Append(body);
  AppendOut(stream, std::move(bytes));
  Submit(stream, std::move(headers), /*with_body=*/true);
}

void GrpcServerSession::RespondPlain(int32_t stream_id, int status, Headers headers,
                                     std::string body) {
  Stream* stream = Find(stream_id);
  if (stream == nullptr || stream->responded) return;
  stream->finished = true;
  headers.insert(headers.begin(), {":status", std::to_string(status)});
  const bool with_body = !body.empty();
  if (with_body) {
    net::BufferChain bytes;
    bytes.Append(body);
    AppendOut(*stream, std::move(bytes));
  }
  Submit(*stream, std::move(headers), with_body);
}

void GrpcServerSession::Refuse(Stream& stream, GrpcStatus status, std::string text) {
  ++counters_.refused_streams;
  if (!stream.complete) {
    stream.complete = true;
    --incomplete_;
  }
  request_bytes_ -= stream.body.size();
  stream.body.clear();
  stream.request.metadata.clear();
  ReleaseStream(stream);
  ReleaseConnection(stream);
  Fail(stream.id, status, text);
  GrantWindows();
}

void GrpcServerSession::AddOriginHeaders(const Stream& stream, Headers* headers) {
  if (origin_headers_ && !stream.origin.empty() && stream.kind != WireKind::kPreflight) {
    origin_headers_(stream.origin, headers);
  }
}

void GrpcServerSession::Submit(Stream& stream, Headers headers, bool with_body) {
  AddOriginHeaders(stream, &headers);
  // grpc-accept-encoding goes after :status and content-type.
  FieldArray nv(headers.size() + 1);
  for (size_t i = 0; i < headers.size(); ++i) {
    if (i == 2) nv.AddLiteral(kAcceptEncodingName, kAcceptedEncodings);
    nv.Add(headers[i].first, headers[i].second);
  }
  if (headers.size() <= 2) nv.AddLiteral(kAcceptEncodingName, kAcceptedEncodings);
  SubmitFields(stream, nv.data(), nv.size(), with_body);
}

void GrpcServerSession::SubmitFields(Stream& stream, const nghttp2_nv* fields, size_t count,
                                     bool with_body) {
  stream.responded = true;
  stream.reset_after_send = nghttp2_session_get_stream_remote_close(h2_.get(), stream.id) == 0;
  nghttp2_data_provider body{};
  body.read_callback = &Callbacks::ReadBody;
  nghttp2_submit_response(h2_.get(), stream.id, fields, count, with_body ? &body : nullptr);
}

void GrpcServerSession::Respond(int32_t stream_id, net::BufferChain&& message, bool compressed,
                                const Headers& metadata) {
  Stream* stream = Find(stream_id);
  if (stream == nullptr || stream->responded) return;
  net::BufferChain body;
  if (stream->kind != WireKind::kConnect) {  // Connect unary: the message is the body
    char prefix[kMessagePrefixSize];
    EncodeMessagePrefix(compressed, static_cast<uint32_t>(message.size()), prefix);
    body.Append(std::string_view(prefix, sizeof(prefix)));
  }
  body.Append(std::move(message));
  stream->trailers.clear();
  if (stream->kind == WireKind::kGrpc) {
    stream->ok_trailers = true;  // grpc-status 0, sent as the body's end
  } else if (stream->kind != WireKind::kConnect) {
    AppendTrailersFrame({{"grpc-status", "0"}}, &body);
  }
  AppendOut(*stream, std::move(body));
  // The fields Submit() would send, in its order, built in place: all but the metadata and
  // CORS's are literals, which nghttp2 neither copies nor lower-cases.
  Headers origin;
  AddOriginHeaders(*stream, &origin);
  FieldArray nv(4 + metadata.size() + origin.size());
  nv.AddLiteral(":status", "200");
  nv.AddLiteral("content-type", ContentType(*stream));
  nv.AddLiteral(kAcceptEncodingName, kAcceptedEncodings);
  if (compressed) {
    nv.AddLiteral(stream->kind == WireKind::kConnect ? "content-encoding" : "grpc-encoding",
                  "gzip");
  }
  for (const auto& [name, value] : metadata) {
    if (!IsReservedHeader(name)) nv.Add(name, value);
  }
  for (const auto& [name, value] : origin) nv.Add(name, value);
  SubmitFields(*stream, nv.data(), nv.size(), /*with_body=*/true);
}

Headers GrpcServerSession::StatusFields(GrpcStatus status, std::string_view text,
                                        std::string_view details) {
  Headers fields = {{"grpc-status", std::to_string(static_cast<int>(status))}};
  if (!text.empty()) fields.emplace_back("grpc-message", PercentEncode(text));
  if (!details.empty()) fields.emplace_back(kStatusDetailsHeader, EncodeBinaryHeader(details));
  return fields;
}

void GrpcServerSession::Fail(int32_t stream_id, GrpcStatus status, std::string_view text,
                             std::string_view details) {
  Stream* stream = Find(stream_id);
  if (stream == nullptr || stream->responded) return;
  if (stream->kind == WireKind::kConnect || stream->kind == WireKind::kConnectStream ||
      stream->kind == WireKind::kPreflight) {
    ConnectEnd(*stream, status, text, {}, {}, details);
    return;
  }
  Headers headers = {{":status", "200"}, {"content-type", std::string(ContentType(*stream))}};
  for (auto& field : StatusFields(status, text, details)) headers.push_back(std::move(field));
  stream->finished = true;
  Submit(*stream, std::move(headers), /*with_body=*/false);
}

void GrpcServerSession::Shutdown() {
  if (h2_.failed()) return;
  nghttp2_submit_goaway(h2_.get(), NGHTTP2_FLAG_NONE,
                        nghttp2_session_get_last_proc_stream_id(h2_.get()), NGHTTP2_NO_ERROR,
                        nullptr, 0);
}

bool GrpcServerSession::TakeOutput(net::BufferChain* out, size_t max_bytes) {
  bool more = false;
  if (const int rv = h2_.Drain(out, max_bytes, &more); rv < 0) {
    Check(rv, "HTTP/2 send");
  }
  return more;
}

bool GrpcServerSession::Closing() const { return !h2_.want_read(); }

bool GrpcServerSession::Finished() const {
  return !h2_.want_read() && !h2_.want_write();
}

// --- streaming calls

void GrpcServerSession::Open(Stream& stream) {
  stream.streaming = true;
  stream.complete = true;  // the unary paths leave it alone from here
  --incomplete_;
  stream.request.streaming = true;
  ready_.push_back(std::move(stream.request));
}

void GrpcServerSession::ReceiveStreamData(Stream& stream, std::string_view data) {
  stream.unreleased += data.size();
  request_bytes_ += data.size();
  stream.body.Append(data);
  DecodeStreamMessages(stream);
  GrantWindows();
}

void GrpcServerSession::DecodeStreamMessages(Stream& stream) {
  bool readable = false;
  // The inbox takes messages up to one window's worth of charge (at least one message); the
  // rest wait in `body` as they arrived (5 bytes of prefix each, packed in pages), decoded as
  // the call takes the ones before: tiny messages cannot multiply the window by their overhead.
  auto inbox_full = [&] {
    return !stream.inbox.empty() && stream.inbox_bytes >= kInboxChargeBytes;
  };
  while (stream.body.size() >= kMessagePrefixSize && !inbox_full()) {
    const uint32_t length = DecodeMessageLength(stream.body);
    if (length > limits_.max_message_bytes) {
      BreakStream(stream, GrpcStatus::kResourceExhausted,
                  "gRPC message of " + std::to_string(length) +
                      " bytes is larger than the server's max_body_size=" +
                      std::to_string(limits_.max_message_bytes));
      return;
    }
    if (stream.body.size() < kMessagePrefixSize + length) break;
    Stream::InMessage message;
    unsigned char flag = 0;
    stream.body.CopyTo(&flag, 1);
    message.compressed = flag != 0;
    stream.body.PopFront(kMessagePrefixSize);
    stream.body.CutFront(length, &message.bytes);
    request_bytes_ += Stream::kQueuedMessageOverhead - kMessagePrefixSize;
    stream.inbox_bytes += length + Stream::kQueuedMessageOverhead;
    stream.inbox.push_back(std::move(message));
    readable = true;
  }
  if (stream.end_received && !stream.input_ended && !inbox_full()) {
    if (!stream.body.empty()) {
      BreakStream(stream, GrpcStatus::kInternal, "the request stream ended inside a message");
      return;
    }
    stream.input_ended = true;
    ReleaseStream(stream);  // no more input: its window does not matter
    readable = true;
  }
  if (readable && (readable_.empty() || readable_.back() != stream.id)) {
    readable_.push_back(stream.id);
  }
}

void GrpcServerSession::EndStreamInput(Stream& stream) {
  stream.end_received = true;
  DecodeStreamMessages(stream);
}

void GrpcServerSession::BreakStream(Stream& stream, GrpcStatus status, std::string text) {
  ++counters_.refused_streams;
  request_bytes_ -= stream.body.size() + stream.inbox_bytes;
  stream.body.clear();
  stream.inbox.clear();
  stream.inbox_bytes = 0;
  stream.input_ended = true;
  ReleaseStream(stream);
  ReleaseConnection(stream);
  if (!stream.finished) {
    if (!stream.responded) {
      Fail(stream.id, status, text);
    } else {
      nghttp2_submit_rst_stream(h2_.get(), NGHTTP2_FLAG_NONE, stream.id, NGHTTP2_INTERNAL_ERROR);
    }
    stream.finished = true;
    canceled_.push_back(stream.id);  // the call stops
  }
  GrantWindows();
}

GrpcServerSession::StreamInput GrpcServerSession::PopMessage(int32_t stream_id,
                                                             net::BufferChain* message,
                                                             bool* compressed) {
  Stream* stream = Find(stream_id);
  if (stream == nullptr || !stream->streaming) return StreamInput::kEnd;
  if (stream->inbox.empty()) return stream->input_ended ? StreamInput::kEnd : StreamInput::kNone;
  Stream::InMessage& next = stream->inbox.front();
  *compressed = next.compressed;
  const size_t charge = next.bytes.size() + Stream::kQueuedMessageOverhead;
  *message = std::move(next.bytes);
  stream->inbox.pop_front();
  stream->inbox_bytes -= charge;
  request_bytes_ -= charge;
  DecodeStreamMessages(*stream);
  GrantWindows();
  return StreamInput::kMessage;
}

std::vector<int32_t> GrpcServerSession::TakeReadable() {
  std::vector<int32_t> ids;
  ids.swap(readable_);
  return ids;
}

std::vector<int32_t> GrpcServerSession::TakeDrained() {
  std::vector<int32_t> ids;
  ids.swap(drained_);
  return ids;
}

size_t GrpcServerSession::StreamHeldBytes(int32_t stream_id) {
  Stream* stream = Find(stream_id);
  return stream == nullptr ? 0 : stream->out.held_bytes();
}

size_t GrpcServerSession::StreamUnreadBytes(int32_t stream_id) {
  Stream* stream = Find(stream_id);
  if (stream == nullptr) return 0;
  return stream->body.size() + stream->inbox_bytes -
         stream->inbox.size() * Stream::kQueuedMessageOverhead;
}

bool GrpcServerSession::SendMessage(int32_t stream_id, net::BufferChain&& message,
                                    bool compressed, const Headers& metadata) {
  Stream* stream = Find(stream_id);
  if (stream == nullptr || !stream->streaming || stream->finished) return false;
  char prefix[kMessagePrefixSize];
  EncodeMessagePrefix(compressed, static_cast<uint32_t>(message.size()), prefix);
  if (stream->kind == WireKind::kGrpcWebText) {
    net::BufferChain frame;
    frame.Append(std::string_view(prefix, sizeof(prefix)));
    frame.Append(std::move(message));
    AppendOut(*stream, std::move(frame));
  } else {
    const size_t held_before = stream->out.held_bytes();
    stream->out.Append(std::string_view(prefix, sizeof(prefix)));
    if (message.size() <= kCopiedMessageBytes) {  // packed with the ones before, not a page each
      for (size_t i = 0; i < message.span_count(); ++i) {
        const std::span<const char> span = message.span(i);
        stream->out.Append(std::string_view(span.data(), span.size()));
      }
    } else {
      stream->out.Append(std::move(message));
    }
    held_bytes_ += stream->out.held_bytes() - held_before;
  }
  if (stream->responded) {
    nghttp2_session_resume_data(h2_.get(), stream_id);
    return true;
  }
  Headers headers = {{":status", "200"}, {"content-type", std::string(ContentType(*stream))}};
  if (compressed) headers.emplace_back("grpc-encoding", "gzip");
  for (const auto& [name, value] : metadata) {
    if (!IsReservedHeader(name)) headers.emplace_back(name, value);
  }
  Submit(*stream, std::move(headers), /*with_body=*/true);
  return true;
}

void GrpcServerSession::FinishStream(int32_t stream_id, GrpcStatus status, std::string_view text,
                                     const Headers& metadata, const Headers& trailers,
                                     std::string_view details) {
  Stream* stream = Find(stream_id);
  if (stream == nullptr || stream->finished) return;
  if (stream->kind == WireKind::kConnectStream && !stream->responded) {
    ConnectEnd(*stream, status, text, metadata, trailers, details);
    return;
  }
  stream->finished = true;
  if (stream->kind == WireKind::kConnectStream) {  // the end-of-stream envelope
    std::string frame;
    AppendEnvelope(kConnectEndStreamFlag,
                   ConnectEndStreamJson(static_cast<int>(status), text, trailers, details),
                   &frame);
    net::BufferChain bytes;
    bytes.Append(frame);
    AppendOut(*stream, std::move(bytes));
    stream->reset_after_send = nghttp2_session_get_stream_remote_close(h2_.get(), stream_id) == 0;
    nghttp2_session_resume_data(h2_.get(), stream_id);
    return;
  }
  Headers status_fields = StatusFields(status, text, details);
  for (const auto& [name, value] : trailers) {
    if (!IsReservedHeader(name)) status_fields.emplace_back(name, value);
  }
  if (!stream->responded) {  // trailers-only
    Headers headers = {{":status", "200"}, {"content-type", std::string(ContentType(*stream))}};
    for (const auto& [name, value] : metadata) {
      if (!IsReservedHeader(name)) headers.emplace_back(name, value);
    }
    headers.insert(headers.end(), status_fields.begin(), status_fields.end());
    Submit(*stream, std::move(headers), /*with_body=*/false);
    return;
  }
  if (stream->TrailersInBody()) {
    net::BufferChain frame;
    AppendTrailersFrame(status_fields, &frame);
    AppendOut(*stream, std::move(frame));
  } else {
    stream->trailers = std::move(status_fields);
  }
  stream->reset_after_send = nghttp2_session_get_stream_remote_close(h2_.get(), stream_id) == 0;
  nghttp2_session_resume_data(h2_.get(), stream_id);
}

}  // namespace arenarpc::protocol::h2
