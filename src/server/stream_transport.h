#pragma once
// ServerStreamTransport: what a streaming method's handler (arenarpc/grpc_stream.h,
// server/grpc_server_stream.cc) needs of the protocol its call came on — gRPC over HTTP/2, or
// grpc-web and Connect server streaming over HTTP/1.1. Calls are named by their key
// (ServerCall::correlation_id()).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "arenarpc/buffer_chain.h"
#include "stream/stream_registry.h"

namespace arenarpc::server {

struct ServerState;

class ServerStreamTransport {
 public:
  using Clock = std::chrono::steady_clock;

  // The call `key` is a streaming call of this transport (its handler gets a stream).
  virtual bool IsStreamCall(int64_t key) = 0;
  // The next request message (*compress_type: its codec, 0 none): 0; ENODATA the client ended
  // its side; ECANCELED the call was canceled (the client went away, broken input) or its
  // deadline passed; ETIMEDOUT no message came for stream_idle_timeout_ms; EREQUEST a compressed
  // message without an encoding.
  virtual int StreamRead(int64_t key, net::BufferChain* message, int* compress_type) = 0;
  // Waits (`wait`) until the stream may queue one more message: it holds less than
  // `max_stream_bytes` (or nothing) and the connection less than max_unwritten_bytes. 0; EAGAIN
  // (not `wait`); ETIMEDOUT `until` passed; ECANCELED as above.
  virtual int StreamWaitRoom(int64_t key, size_t max_stream_bytes, bool wait,
                             Clock::time_point until) = 0;
  // Queues one response message (its wire bytes); the headers (with *metadata) go first, with
  // the first one.
  virtual int StreamSend(int64_t key, net::BufferChain&& message, bool compressed,
                         const std::map<std::string, std::string>* metadata) = 0;
  virtual void AddStreamTrailer(int64_t key, std::string name, std::string value) = 0;
  // The client takes gzip-compressed response messages.
  virtual bool StreamAcceptsGzip(int64_t key) = 0;
  virtual size_t max_body_size() const noexcept = 0;
  virtual ServerState& state() const noexcept = 0;
  // Shows the stream on the pages (/status, /connections) while the entry lives; the transport
  // keeps the bytes it buffers each way current in its counters, the handler counts messages.
  virtual stream::StreamRegistry::Entry RegisterStream(int64_t key, std::string_view method) = 0;

 protected:
  ~ServerStreamTransport() = default;
};

}  // namespace arenarpc::server
