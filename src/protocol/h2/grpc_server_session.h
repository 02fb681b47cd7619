#pragma once
// GrpcServerSession: the server side of one HTTP/2 connection carrying gRPC calls, on libnghttp2.
// Bytes in (Receive), complete unary requests out (PopRequest), responses in (Respond / Fail),
// bytes out (TakeOutput). No sockets, no admission, no locking: the owner serializes the calls.
//
// Memory (docs/server.md, "HTTP/2 (gRPC) connections"): request bytes received and not yet
// popped are bounded by request_bytes_budget + max_message_bytes + connection_window. Every DATA
// byte is given back to the client's windows only when the session lets go of it or holds less
// than the budget: the connection window is given back for a stream's bytes while the session
// holds less than request_bytes_budget (or as the call takes them: a popped request, a taken
// message, a stream gone), the stream's window likewise — except the oldest unfinished stream's,
// both of them, while no complete request waits to be popped, so that one request always
// completes (no stall with every stream half-received). Bytes received while the session holds
// the budget stay charged to the connection window: a client can send at most connection_window
// more, whatever the number of streams; should it have spent the connection window on other
// streams than the oldest, the newest unfinished unary requests are refused (REFUSED_STREAM)
// until the oldest's message fits (KeepTheOldestGoing). Streams are bounded by max_concurrent_streams, header
// lists by max_header_list_bytes (larger ones are answered RESOURCE_EXHAUSTED and the stream
// reset at the field that passes it; the rest of the block is not decoded into fields), a message
// by max_message_bytes. Responses wait in held_bytes() until the client's flow-control windows
// take them.
//
// A stream opened before the client acknowledged our SETTINGS gets stream_window at once (a
// WINDOW_UPDATE): clients that assume a larger window than 65,535 before SETTINGS (brpc's) are
// not cut off; the connection window still bounds what they can send.
//
// Browsers' protocols (WireKind, docs/http.md "Over HTTP/2") share all of the above: grpc-web and
// Connect streaming take the gRPC envelope path; Connect unary, grpc-web-text and a Connect GET's
// query are read whole (at most max_message_bytes, base64: 4/3 of it + 1 KiB) before they are
// decoded; an OPTIONS request is handed to the owner as a preflight. Replies are framed per kind.
//
// Streaming calls (a path the streaming predicate names): the request is popped as soon as its
// headers are complete; its messages are queued on the stream as they complete (PopMessage), each
// charged its payload plus a fixed overhead for its queue entry, up to kInboxChargeBytes of
// charge (the rest wait as received, packed, and are decoded as the call takes messages); its
// window reopens only while none waits there, within the same budget; responses are started,
// sent message by message and finished (StartStream / SendMessage / FinishStream).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <map>
#include <utility>
#include <vector>

#include "arenarpc/buffer_chain.h"
#include "protocol/h2/bdp_window.h"
#include "protocol/h2/grpc_wire.h"
#include "protocol/h2/nghttp2_core.h"

namespace arenarpc::protocol::h2 {

// What a stream speaks, from its method and content-type: gRPC, or a browser's protocol on the same
// connection (docs/http.md, "Browsers: grpc-web and Connect").
enum class WireKind : uint8_t {
  kGrpc,           // application/grpc: HTTP/2 trailers
  kGrpcWeb,        // application/grpc-web(+proto): the trailers are the body's last frame
  kGrpcWebText,    // application/grpc-web-text(+proto): the same body in base64, both ways
  kConnect,        // Connect unary (application/proto|json): the body is the message
  kConnectStream,  // application/connect+proto|json: envelopes, then an end-of-stream envelope
  kPreflight,      // OPTIONS: a CORS preflight, answered by the owner (RespondPlain)
};

struct GrpcRequest {
  int32_t stream_id = 0;
  WireKind kind = WireKind::kGrpc;
  bool json = false;          // Connect with JSON messages (else binary protobuf)
  std::string path;           // ":path", e.g. "/pkg.Service/Method"
  int64_t timeout_ms = -1;    // grpc-timeout; -1 none
  bool compressed = false;    // the message's compressed flag (grpc-encoding names the codec)
  std::string encoding;       // grpc-encoding ("" = identity)
  bool accepts_gzip = false;  // grpc-accept-encoding lists gzip
  std::vector<std::pair<std::string, std::string>> metadata;  // custom headers, as received
  net::BufferChain message;   // the message bytes after the 5-byte prefix
  bool streaming = false;     // a streaming call: its messages come through PopMessage()
  bool get = false;           // a Connect GET (the owner checks the method has no side effects)
  std::string origin;         // the Origin header (CORS), when there is one
  size_t held = 0;            // what the session counts for it until popped
  // != kOk: the request is refused without a call (e.g. not gRPC, or no message)
  GrpcStatus refusal = GrpcStatus::kOk;
  std::string refusal_text;
};

class GrpcServerSession {
 public:
  // What a streaming call's decoded messages not yet taken may be charged (at least one message).
  static constexpr size_t kInboxChargeBytes = 64u << 10;
  struct Limits {
    uint32_t max_concurrent_streams = 100;
    size_t max_header_list_bytes = 64u << 10;
    size_t max_message_bytes = 4u << 20;
    size_t request_bytes_budget = 4u << 20;
    uint32_t stream_window = 4u << 20;       // SETTINGS_INITIAL_WINDOW_SIZE
    uint32_t connection_window = 16u << 20;  // the connection's receive window (WINDOW_UPDATE)
    uint32_t max_frame_size = 16384;         // SETTINGS_MAX_FRAME_SIZE (16384..16777215)
    // BDP-based growth (BdpWindow): both windows grow toward 2 x the measured bandwidth-delay
    // product, up to this. 0 (or not above the windows): they stay as set.
    uint32_t max_window = 0;
    // Floods of frames that carry no work end the connection (GOAWAY ENHANCE_YOUR_CALM), as
    // Envoy does: DATA without payload nor END_STREAM, more than this many in a row ...
    uint32_t max_consecutive_empty_frames = 1;
    // ... and WINDOW_UPDATE, PING, SETTINGS, RST_STREAM, PRIORITY: more than this many in one
    // second, plus max_control_frames_per_work for each request HEADERS and DATA frame with
    // payload received and each DATA frame sent in that second.
    uint32_t max_control_frames_per_second = 1000;
    uint32_t max_control_frames_per_work = 10;
  };
  struct Counters {
    uint64_t refused_streams = 0;   // header list / message limits, bad requests
    uint64_t canceled_streams = 0;  // reset by the client before their response went out
    uint64_t invalid_frames = 0;    // frames nghttp2 rejected (stream or connection errors)
    uint64_t connection_errors = 0; // GOAWAY with an error code sent (the connection ends)
    uint64_t header_lists_cut = 0;  // header lists cut off at max_header_list_bytes
    uint64_t floods = 0;            // connections ended for frames that carry no work
    uint64_t window_growths = 0;    // BDP estimates that grew the windows
  };

  explicit GrpcServerSession(const Limits& limits);
  ~GrpcServerSession();
  GrpcServerSession(const GrpcServerSession&) = delete;
  GrpcServerSession& operator=(const GrpcServerSession&) = delete;

  // Feeds `input` (all of it). false: a connection error (error() says why); the session sent
  // GOAWAY (in TakeOutput) and accepts nothing more.
  bool Receive(const net::BufferChain& input);
  bool Receive(std::string_view input);
  // Feeds at most `max_bytes` of `input` and removes them from it; as Receive() otherwise.
  bool ReceiveSome(net::BufferChain& input, size_t max_bytes);
  const std::string& error() const noexcept { return h2_.error(); }
  // The next complete request, in the order they completed.
  bool PopRequest(GrpcRequest* request);
  // Streams that ended before a response (RST_STREAM from the client) since the last call.
  std::vector<int32_t> TakeCanceled();

  // A response for `stream_id`: headers (with `metadata`), `message` as one length-prefixed
  // gRPC message (`compressed`: it is gzip), trailers with grpc-status 0. Dropped when the
  // stream is gone.
  void Respond(int32_t stream_id, net::BufferChain&& message, bool compressed,
               const std::vector<std::pair<std::string, std::string>>& metadata);
  // A trailers-only response with `status`, `text` (percent-encoded into grpc-message) and, when
  // not empty, `details` (a serialized google.rpc.Status) as grpc-status-details-bin.
  void Fail(int32_t stream_id, GrpcStatus status, std::string_view text,
            std::string_view details = {});
  // A plain HTTP answer (a CORS preflight's): `status`, `headers`, `body`, END_STREAM.
  void RespondPlain(int32_t stream_id, int status,
                    std::vector<std::pair<std::string, std::string>> headers, std::string body);
  // Headers every response to a request with an Origin header carries (CORS), added by `add`.
  using OriginHeaders = std::function<void(std::string_view origin,
                                           std::vector<std::pair<std::string, std::string>>*)>;
  void set_origin_headers(OriginHeaders add) { origin_headers_ = std::move(add); }
  // Streaming calls. `predicate(path)`: the stream is a streaming call.
  void set_streaming_predicate(std::function<bool(std::string_view path)> predicate) {
    is_streaming_ = std::move(predicate);
  }
  enum class StreamInput { kMessage, kNone, kEnd };
  // The next complete message of a streaming call (its window may reopen). kNone: none yet;
  // kEnd: the client ended its side (or the stream is gone).
  StreamInput PopMessage(int32_t stream_id, net::BufferChain* message, bool* compressed);
  // Streaming calls with new input (a message, or the end) since the last call.
  std::vector<int32_t> TakeReadable();
  bool HasReadable() const noexcept { return !readable_.empty(); }
  // Streaming calls whose queued response bytes went (partly) out since the last call.
  std::vector<int32_t> TakeDrained();
  bool HasDrained() const noexcept { return !drained_.empty(); }
  // Response bytes one stream holds that its window did not take yet.
  size_t StreamHeldBytes(int32_t stream_id);
  // Request bytes of a streaming call received and not popped yet (messages and partial input).
  size_t StreamUnreadBytes(int32_t stream_id);
  // Sends the response headers (with `metadata`) once, then `message` as one length-prefixed
  // message. false: the stream is gone or finished.
  bool SendMessage(int32_t stream_id, net::BufferChain&& message, bool compressed,
                   const std::vector<std::pair<std::string, std::string>>& metadata);
  // Ends a streaming response: trailers with `status`, `text`, `details` (as Fail) and
  // `trailers`; a stream with no message sent gets a trailers-only response (with `metadata`).
  void FinishStream(int32_t stream_id, GrpcStatus status, std::string_view text,
                    const std::vector<std::pair<std::string, std::string>>& metadata,
                    const std::vector<std::pair<std::string, std::string>>& trailers,
                    std::string_view details = {});
  // GOAWAY (NO_ERROR) naming the last stream taken: the client opens no new stream here, and
  // streams already taken finish.
  void Shutdown();

  // Appends the bytes the session may send now to *out, frame by frame until *out holds
  // `max_bytes` or more. true: more waits (call again once they are written).
  bool TakeOutput(net::BufferChain* out, size_t max_bytes = SIZE_MAX);
  // DATA payload bytes handed to TakeOutput so far (monotonic): responses making progress.
  uint64_t data_bytes_sent() const noexcept { return data_bytes_sent_; }
  // The session is done (GOAWAY exchanged or a connection error) and wrote its last bytes.
  bool Finished() const;
  // The session reads nothing more (a connection error, or GOAWAY and no stream left).
  bool Closing() const;
  // Bytes of responses waiting for the client's flow-control windows.
  size_t held_bytes() const noexcept { return held_bytes_; }
  // A stream has a request that has not completed (headers or a message in progress).
  bool InRequest() const noexcept { return incomplete_ > 0; }
  size_t open_streams() const noexcept { return streams_.size(); }
  // Request bytes held: DATA of unfinished requests, requests not popped, streaming calls'
  // messages not taken (each charged its payload + a fixed overhead for its queue entry).
  size_t queued_request_bytes() const noexcept { return request_bytes_; }
  const Counters& counters() const noexcept { return counters_; }
  // The windows the client is granted now (Limits, or grown from the BDP estimate).
  uint32_t stream_window() const noexcept { return stream_window_; }
  uint32_t connection_window() const noexcept { return connection_window_; }

 private:
  struct Stream;
  struct Callbacks;  // nghttp2's callbacks, friends of this class

  Stream* Find(int32_t stream_id);
  static std::string_view ContentType(const Stream& stream);  // the reply's, by the stream's kind
  // From the request's method and content-type: its WireKind (false: refused, answered).
  bool Classify(Stream& stream);
  // A request whose whole body is read before it is decoded (Connect unary, grpc-web-text, a
  // preflight): its END_STREAM.
  void CompleteWholeBody(Stream& stream);
  // What such a body may hold (grpc-web-text: base64 of a message of max_message_bytes).
  size_t WholeBodyLimit(const Stream& stream) const;
  // Appends response bytes to the stream's output (grpc-web-text: in base64), counted held.
  void AppendOut(Stream& stream, net::BufferChain&& bytes);
  // A Connect answer that ends the stream: unary, an error (its HTTP status, Connect's JSON, with
  // `details`, a google.rpc.Status, as its "details"); streaming, headers with `metadata` and the
  // end-of-stream envelope (`status`, `trailers`, `details`).
  void ConnectEnd(Stream& stream, GrpcStatus status, std::string_view text,
                  const std::vector<std::pair<std::string, std::string>>& metadata,
                  const std::vector<std::pair<std::string, std::string>>& trailers,
                  std::string_view details = {});
  void Refuse(Stream& stream, GrpcStatus status, std::string text);
  void Complete(Stream& stream);
  void Open(Stream& stream);  // a streaming call: its request goes out at once
  void ReceiveStreamData(Stream& stream, std::string_view data);
  // Complete messages of a streaming call from its raw bytes into its inbox, as far as the
  // inbox's bound allows; the end of its input once every message before END_STREAM is in.
  void DecodeStreamMessages(Stream& stream);
  void EndStreamInput(Stream& stream);
  // A streaming call's input broke (a message over the limit): answered `status` if nothing was
  // sent yet, reset otherwise; the call sees a cancel.
  void BreakStream(Stream& stream, GrpcStatus status, std::string text);
  // Sends the response headers (with grpc-accept-encoding and the CORS headers added).
  void Submit(Stream& stream, std::vector<std::pair<std::string, std::string>> headers,
              bool with_body);
  // Sends `fields` as the response headers (nghttp2 copies those not flagged NO_COPY).
  void SubmitFields(Stream& stream, const nghttp2_nv* fields, size_t count, bool with_body);
  // The owner's OriginHeaders for a request with an Origin header (not a preflight's).
  void AddOriginHeaders(const Stream& stream,
                        std::vector<std::pair<std::string, std::string>>* headers);
  // grpc-status, grpc-message and grpc-status-details-bin for a status.
  static std::vector<std::pair<std::string, std::string>> StatusFields(GrpcStatus status,
                                                                       std::string_view text,
                                                                       std::string_view details);
  // Reopens the stream windows the budget allows (see the top of this file).
  void GrantWindows();
  bool Check(int rv, std::string_view what) { return h2_.Check(rv, what); }
  // Gives the client back the stream window / the connection window of the bytes `stream` got
  // and that were not given back yet.
  void ReleaseStream(Stream& stream);
  void ReleaseConnection(Stream& stream);
  // Sends the connection window given back so far: `now`, or once it is half the window.
  void FlushConnectionWindow(bool now);
  // Grows the stream window (SETTINGS) and the connection window (WINDOW_UPDATE) to `window`.
  void GrowWindows(uint32_t window);
  // Over the budget with nothing to pop: makes room in the connection window for the rest of
  // `oldest`'s message (refusing the newest unfinished unary requests if their bytes hold it).
  void KeepTheOldestGoing(Stream& oldest);
  static SessionCallbacks CallbackTable();
  // Counts a received frame (`payload`: DATA bytes without padding) against the flood limits
  // (Limits); false: past them (flood_ says why).
  bool CountFrame(uint8_t type, uint8_t flags, size_t payload);

  const Limits limits_;
  std::map<int32_t, std::unique_ptr<Stream>> streams_;  // by id: the oldest first
  std::deque<GrpcRequest> ready_;
  std::vector<int32_t> canceled_;
  std::vector<int32_t> readable_, drained_;
  std::function<bool(std::string_view)> is_streaming_;
  OriginHeaders origin_headers_;
  size_t held_bytes_ = 0;
  size_t incomplete_ = 0;
  // The stream whose request header block nghttp2 is reading (OnBeginHeaders sets it): its
  // fields find it without a map lookup each. Null once that stream closes.
  Stream* header_stream_ = nullptr;
  size_t request_bytes_ = 0;  // DATA of unfinished streams and of requests not popped
  uint64_t data_bytes_sent_ = 0;
  // Flood accounting: the current one-second window (from the Receive() call's clock).
  std::chrono::steady_clock::time_point now_{}, window_start_{};
  uint64_t control_frames_ = 0, work_frames_ = 0;
  uint32_t consecutive_empty_ = 0;
  bool settings_acked_ = false;  // the client acknowledged our SETTINGS
  uint32_t stream_window_;       // SETTINGS_INITIAL_WINDOW_SIZE announced last
  uint32_t connection_window_;   // the connection's receive window
  BdpWindow bdp_;
  size_t connection_unsent_ = 0;  // connection window given back, WINDOW_UPDATE not sent yet
  std::string flood_;  // why the flood limit ended the connection
  std::string error_reason_;  // nghttp2's words for the last error it reported
  Counters counters_;
  // Last: destroyed first, as the streams its callbacks reach still live.
  Nghttp2Core h2_;
};

}  // namespace arenarpc::protocol::h2
