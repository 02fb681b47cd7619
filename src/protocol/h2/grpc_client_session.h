#pragma once
// GrpcClientSession: the client side of one HTTP/2 connection carrying gRPC calls (unary, and
// streams whose messages go both ways while they are open), on libnghttp2. Requests in (Start / Cancel), bytes out (TakeOutput), bytes in (Receive), finished
// calls out (PopResponse). No sockets, no timers, no locking: the owner serializes the calls.
//
// Streams: at most min(max_concurrent_streams, the server's SETTINGS_MAX_CONCURRENT_STREAMS) are
// open; later requests wait here, in order (queued_bytes() counts them). GOAWAY from the server:
// streams past its last-stream-id and every waiting request come out `unprocessed` (the server
// never saw them: safe to send again elsewhere); no request starts here any more.
//
// Memory (docs/grpc.md): response bytes held (DATA of open streams and responses not popped) stay
// under response_bytes_budget + max_message_bytes + open streams x stream_window: a stream's window
// reopens as its bytes arrive only while the session holds less than the budget, except the oldest
// open stream's (one response always completes). The connection window bounds them too, streaming
// calls' messages the owner has not released included (unconsumed_bytes()): a byte's connection
// window comes back once the owner is done with it (a popped response, a released message, a
// stream gone), or at once while the session holds less than response_bytes_budget, or when it
// belongs to the oldest unary response in progress (popped as soon as it completes). So whatever
// the number of streams whose readers stall, the session holds at most response_bytes_budget +
// max_message_bytes + 5 + the connection window; stalled streams that hold all of it stop the
// others too (the window is shared, docs/grpc.md "Flow control"). A response header list
// (headers, then trailers) larger than max_header_list_bytes, or a message larger than
// max_message_bytes, ends its stream with RST_STREAM and an error, without keeping the rest.
//
// A streaming call (GrpcClientRequest::streaming) sends what Send() queues until CloseSend(); its
// response messages come out one by one (PopMessage) before its final response (status and
// metadata only). Its stream window reopens only while none of its popped messages is unreleased
// (Release): one stream holds at most max_message_bytes + 5 + stream_window of received bytes,
// popped-unreleased ones included.

#include <cstddef>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "arenarpc/buffer_chain.h"
#include "protocol/h2/bdp_window.h"
#include "protocol/h2/grpc_wire.h"
#include "protocol/h2/nghttp2_core.h"

namespace arenarpc::protocol::h2 {

using Metadata = std::vector<std::pair<std::string, std::string>>;

struct GrpcClientRequest {
  std::string path;          // "/pkg.Service/Method"
  std::string authority;     // ":authority", e.g. "127.0.0.1:8000"
  // The call's deadline: grpc-timeout is the time left when the stream opens (a request that
  // waited for a stream slot past it is not sent). max(): none.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  bool gzip = false;         // `message` is gzip-compressed (grpc-encoding: gzip)
  Metadata metadata;         // custom headers (names are lower-cased on the wire)
  net::BufferChain message;  // the serialized request, without the 5-byte prefix
  // A streaming call: `message` must be empty; messages come with Send(), the end with CloseSend().
  bool streaming = false;
};

// One response message of a streaming call.
struct GrpcStreamMessage {
  int64_t tag = 0;
  bool compressed = false;   // the message's compressed flag
  std::string encoding;      // grpc-encoding ("" = identity)
  size_t wire_bytes = 0;     // prefix + message: what Release() gives back
  net::BufferChain message;  // after the 5-byte prefix
};

struct GrpcClientResponse {
  int64_t tag = 0;
  // The request never reached the server (REFUSED_STREAM, past GOAWAY's last-stream-id, or still
  // waiting here): it may be sent again.
  bool unprocessed = false;
  // 0: the server finished the call with grpc_status (and, when 0, `message`). Otherwise the
  // call failed here or on the wire (an arenarpc error code, e.g. ERESPONSE) with error_text.
  int error_code = 0;
  std::string error_text;
  int grpc_status = -1;
  std::string grpc_message;  // percent-decoded
  std::string status_details;  // grpc-status-details-bin, decoded (a google.rpc.Status)
  bool compressed = false;   // the message's compressed flag
  std::string encoding;      // grpc-encoding ("" = identity)
  Metadata metadata;         // custom headers and trailers, as received
  net::BufferChain message;  // the response message after the 5-byte prefix
};

class GrpcClientSession {
 public:
  struct Limits {
    uint32_t max_concurrent_streams = 100;
    size_t max_header_list_bytes = 64u << 10;
    size_t max_message_bytes = 4u << 20;
    size_t response_bytes_budget = 4u << 20;
    uint32_t stream_window = 1u << 20;  // SETTINGS_INITIAL_WINDOW_SIZE we announce
    uint32_t connection_window = 16u << 20;  // the connection's receive window
    uint32_t max_frame_size = 16384;         // SETTINGS_MAX_FRAME_SIZE we announce
    // BDP-based growth (BdpWindow): both windows grow toward 2 x the measured bandwidth-delay
    // product, up to this. 0 (or not above the windows): they stay as set.
    uint32_t max_window = 0;
  };
  struct Counters {
    uint64_t streams_started = 0;
    uint64_t streams_reset = 0;      // RST_STREAM sent (cancel, limits)
    uint64_t header_limit_hits = 0;  // response header lists past max_header_list_bytes
    uint64_t message_limit_hits = 0; // response messages past max_message_bytes
    uint64_t window_growths = 0;     // BDP estimates that grew the windows
    uint64_t expired_unsent = 0;     // requests whose deadline passed while they waited for a
                                     // stream slot: not sent
  };

  explicit GrpcClientSession(const Limits& limits);
  ~GrpcClientSession();
  GrpcClientSession(const GrpcClientSession&) = delete;
  GrpcClientSession& operator=(const GrpcClientSession&) = delete;

  // Queues a call under `tag` (unique among the calls in the session); it starts when a stream
  // slot is free. After GOAWAY or a connection error its response is `unprocessed` at once.
  void Start(int64_t tag, GrpcClientRequest&& request);
  // Forgets the call: an open stream is reset (RST_STREAM CANCEL), a waiting request dropped. No
  // response comes for it.
  void Cancel(int64_t tag);

  // Streaming calls (started with request.streaming): queues one request message (serialized,
  // gzip-compressed when `gzip`) / ends the request side (END_STREAM after what is queued). false:
  // no such open call (it ended), or its request side is closed.
  bool Send(int64_t tag, net::BufferChain message, bool gzip);
  bool CloseSend(int64_t tag);
  // Request bytes of the call not taken by its HTTP/2 windows yet (0 for an unknown tag).
  size_t unsent_bytes(int64_t tag) const;
  // The next response message of a streaming call, in arrival order.
  bool PopMessage(GrpcStreamMessage* message);
  // The owner is done with `wire_bytes` of popped messages of the call: once all are, its stream
  // window reopens.
  void Release(int64_t tag, size_t wire_bytes);
  // Tags of streaming calls whose unsent request bytes went into TakeOutput() since the last call.
  std::vector<int64_t> TakeDrained();

  // Feeds `input` (all of it). false: a connection error (error() says why); the session sends
  // GOAWAY (in TakeOutput) and reads nothing more.
  bool Receive(const net::BufferChain& input);
  bool Receive(std::string_view input);
  const std::string& error() const noexcept { return h2_.error(); }
  bool PopResponse(GrpcClientResponse* response);
  // Tags whose request HEADERS went into TakeOutput()'s bytes since the last call.
  std::vector<int64_t> TakeStarted();
  // Appends every byte the session may send now to *out.
  void TakeOutput(net::BufferChain* out);

  // The server sent GOAWAY: no new call starts here.
  bool goaway_received() const noexcept { return goaway_; }
  // Nothing left to do: no stream open, nothing waiting, nothing to write.
  bool Idle() const;
  bool failed() const noexcept { return h2_.failed(); }
  size_t open_streams() const noexcept { return streams_.size(); }
  // Request bytes not written out yet (waiting for a stream slot or for the server's windows).
  size_t unsent_request_bytes() const noexcept { return unsent_bytes_; }
  // Response bytes held (see the top of this file).
  size_t held_response_bytes() const noexcept { return response_bytes_; }
  // Response bytes held for the owner, streaming calls' unreleased messages included: what the
  // connection window bounds (see the top of this file).
  size_t unconsumed_bytes() const;
  // The windows the server is granted now (Limits, or grown from the BDP estimate).
  uint32_t stream_window() const noexcept { return stream_window_; }
  uint32_t connection_window() const noexcept { return connection_window_; }
  const Counters& counters() const noexcept { return counters_; }

 private:
  struct Stream;
  struct Callbacks;  // nghttp2's callbacks, friends of this class
  struct Waiting {
    int64_t tag = 0;
    GrpcClientRequest request;
    net::BufferChain sent;     // streaming: prefixed messages Send() queued meanwhile
    bool send_closed = false;  // streaming: CloseSend() came meanwhile
    // What it counts in unsent_request_bytes().
    size_t unsent_bytes() const {
      return request.streaming ? sent.size() : kMessagePrefixSize + request.message.size();
    }
  };

  Stream* Find(int32_t stream_id);
  // Opens streams for waiting requests while slots are free.
  void StartWaiting();
  void Submit(Waiting&& waiting);
  // Ends the stream with RST_STREAM and a local error (its response carries it).
  void Abort(Stream& stream, int error_code, std::string text, uint32_t h2_error);
  void Finish(Stream& stream, uint32_t h2_error);
  void FailWaiting(std::string_view why);
  // What a stream holds for the owner: a response in progress, popped messages not released.
  static size_t HeldBy(const Stream& stream);
  // Reopens the stream windows and gives back the connection window the rules above allow.
  void GrantWindows();
  // Gives the server back `bytes` of the connection window `stream` holds.
  void ReturnConnection(Stream& stream, size_t bytes);
  // Grows the stream window (SETTINGS) and the connection window (WINDOW_UPDATE) to `window`.
  void GrowWindows(uint32_t window);
  // A streaming call: cuts complete messages off its body into messages_.
  void SplitMessages(Stream& stream);
  // The queued request of a call that waits for a stream slot, or nullptr.
  Waiting* FindWaiting(int64_t tag);
  // Checks an nghttp2 result (Nghttp2Core::Check); the first failure fails the waiting requests.
  bool Check(int rv, std::string_view what);

  const Limits limits_;
  std::map<int32_t, std::unique_ptr<Stream>> streams_;  // by id: the oldest first
  std::unordered_map<int64_t, int32_t> stream_of_tag_;
  std::deque<Waiting> waiting_;
  std::deque<GrpcClientResponse> ready_;
  std::deque<GrpcStreamMessage> messages_;
  std::vector<int64_t> started_;
  std::vector<int64_t> drained_;
  size_t unsent_bytes_ = 0;
  size_t response_bytes_ = 0;
  bool goaway_ = false;
  uint32_t stream_window_;      // SETTINGS_INITIAL_WINDOW_SIZE announced last
  uint32_t connection_window_;  // the connection's receive window
  BdpWindow bdp_;
  Counters counters_;
  // Last: destroyed first, as the streams its callbacks reach still live.
  Nghttp2Core h2_;
};

}  // namespace arenarpc::protocol::h2
