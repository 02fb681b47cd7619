#pragma once
// Streaming RPC in brpc's shape (docs/streaming.md): a client creates a stream on a call's
// controller before the call, the server's handler accepts it, and from the reply on both sides
// exchange ordered messages on the call's connection, with flow control. Interoperates with brpc's
// streams over baidu_std ("STRM" frames, docs/protocol.md).
//
//   // client                                   // server handler
//   arenarpc::StreamId id;                       arenarpc::StreamId id;
//   arenarpc::StreamCreate(&id, cntl, &opts);    arenarpc::StreamAccept(&id, *cntl, &opts);
//   stub.Call(&cntl, &req, &res, nullptr);       done->Run();  // the reply carries the stream
//   arenarpc::StreamWrite(id, message);          arenarpc::StreamWrite(id, message);
//   arenarpc::StreamClose(id);

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>

#include "arenarpc/buffer_chain.h"
#include "arenarpc/controller.h"

namespace arenarpc {

using StreamId = uint64_t;
inline constexpr StreamId INVALID_STREAM_ID = 0;

// Receives a stream's events. Calls for one stream never overlap and come in order: messages as
// written, then on_failed (if the stream broke), then on_closed, the last call for that id. On a
// server they run on fibers (a wait inside suspends the fiber); on a client on the channel's I/O
// threads (keep them short there).
class StreamInputHandler {
 public:
  virtual ~StreamInputHandler() = default;
  // `size` messages (at most StreamOptions::messages_in_batch); they are consumed (and the writer's
  // window reopens) when this returns. The return value is ignored, as in brpc.
  virtual int on_received_messages(StreamId id, IOBuf* const messages[], size_t size) = 0;
  // No message came for idle_timeout_ms (repeats while the stream stays idle).
  virtual void on_idle_timeout(StreamId id) = 0;
  virtual void on_closed(StreamId id) = 0;
  // The stream broke: RST from the peer (ECONNRESET), the connection was lost (EEOF, or the
  // socket's error), the call did not set it up, the peer overran max_unconsumed_bytes
  // (EOVERCROWDED), or the peer's FEEDBACK acknowledged more than was written (EPROTO; the peer
  // gets RST). on_closed follows.
  virtual void on_failed(StreamId /*id*/, int /*error_code*/, const std::string& /*error_text*/) {}
};

struct StreamOptions {
  // Writer's window: StreamWrite() fails with EAGAIN while this many written bytes are not yet
  // acknowledged (FEEDBACK) by the reader; <= 0: no limit and no feedback asked for.
  int64_t max_buf_size = 2 * 1024 * 1024;
  // on_idle_timeout after this long without a message; < 0: never.
  int64_t idle_timeout_ms = -1;
  // At most this many messages per on_received_messages() call.
  size_t messages_in_batch = 128;
  // Receives this side's messages and events; nullptr: this side does not read (the peer's
  // StreamWrite fails with EBADF), events are dropped.
  StreamInputHandler* handler = nullptr;
  // (arenarpc) Received bytes not yet consumed by the handler, at most. A peer that writes past
  // it (ignoring our feedback) gets RST and this side on_failed(EOVERCROWDED). A writer that
  // honours flow control stays below its own max_buf_size plus one message.
  size_t max_unconsumed_bytes = 16u << 20;
};

// Client: offers a stream with the call `cntl` is about to make (once per call). 0, or -1
// (already one, or bad arguments). The stream connects when the call succeeds with the server
// accepting it; otherwise it fails (on_failed, on_closed). Writes before that are held.
int StreamCreate(StreamId* id, Controller& cntl, const StreamOptions* options);
// Server handler: accepts the stream the client offered with this call. 0, or -1 (none offered,
// already accepted, or the connection holds too many streams). On -1 the handler in `options` is
// never called (as brpc: the caller still owns it). The stream connects when the call's reply is
// sent; a call that fails does not accept it (the stream fails). A call whose handler did not
// accept the offered stream fails on the client with EREQUEST "The server didn't accept the
// stream", as brpc's.
int StreamAccept(StreamId* id, Controller& cntl, const StreamOptions* options);
// Queues one message. 0: it will be delivered, or the stream fails (on_failed on both sides);
// EAGAIN: the window is full (StreamWait); EOVERCROWDED: the connection holds its
// max_unwritten_bytes of unsent output (the peer does not read; StreamWait), or, before the
// stream connects, that much is held; EINVAL: unknown, closed or closing stream; EBADF: the peer
// has no handler. Nothing is queued unless it returns 0.
int StreamWrite(StreamId id, const IOBuf& message);
// Waits until a StreamWrite() may succeed: the window has room and the connection is under its
// unsent-output bound (a fiber suspends, a thread blocks), at most until `due_time`
// (CLOCK_REALTIME, as brpc; nullptr: no limit). 0, ETIMEDOUT or EINVAL (closed).
int StreamWait(StreamId id, const timespec* due_time);
// Closes the stream: the peer gets CLOSE, this side's handler on_closed. On a stream not connected
// yet (a server's before its reply is written), the writes it holds go out first, then CLOSE. 0,
// or EINVAL.
int StreamClose(StreamId id);

}  // namespace arenarpc
