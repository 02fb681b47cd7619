#pragma once
// A gRPC streaming call made by a Channel with protocol "grpc" (docs/grpc.md, "Channel as a gRPC
// client"): server-, client- and bidirectional streaming rpcs, the client-side mirror of
// GrpcServerStream. The stream lives on one HTTP/2 stream of one of the channel's connections
// (picked by its balancer once, at Open; never retried).
//
//   arenarpc::Controller cntl;
//   cntl.set_timeout_ms(2000);                      // the whole stream's deadline (or the channel's)
//   arenarpc::GrpcClientStream stream;
//   stream.Open(channel, example::ChatService::descriptor()->FindMethodByName("Chat"), &cntl);
//   stream.Write(request);                          // waits while max_buffered_bytes are unsent
//   stream.WritesDone();
//   while (stream.Read(&reply)) { ... }             // waits for the next message
//   if (stream.Finish() != 0) LOG << cntl.ErrorText();
//
// Waiting calls (Write, WaitWritable, Read, Finish) suspend a fiber (a handler's) and block a
// plain thread. One reader and one writer may run at once; Finish/StartCancel from any thread.

#include <chrono>
#include <cstddef>
#include <memory>

#include "arenarpc/controller.h"

namespace google::protobuf {
class Message;
class MethodDescriptor;
}  // namespace google::protobuf

namespace arenarpc {

class Channel;
namespace client {
class GrpcStreamCall;
}

struct GrpcClientStreamOptions {
  // Request bytes (with their 5-byte prefixes) the stream holds that the server's HTTP/2 windows
  // did not take yet; Write() waits past it. One message larger than this is still sent, alone.
  size_t max_buffered_bytes = 1u << 20;
};

class GrpcClientStream {
 public:
  GrpcClientStream();
  // An open stream not finished yet is canceled (RST_STREAM CANCEL).
  ~GrpcClientStream();
  GrpcClientStream(const GrpcClientStream&) = delete;
  GrpcClientStream& operator=(const GrpcClientStream&) = delete;

  // Starts the call of `method` (a streaming rpc, or a unary one sent as a one-message stream) on
  // `channel` (protocol "grpc"). The controller stays the caller's and must outlive the stream:
  // its request_user_fields go out as metadata, its timeout_ms (else the channel's) is the
  // stream's deadline (grpc-timeout, then RST_STREAM CANCEL here), request_compress_type gzip
  // compresses every request; Finish() fills in the status and response_user_fields. Returns 0,
  // or an error code with the controller failed (EINVAL: not a "grpc" channel, opened twice, a
  // non-gzip compression; EHOSTDOWN: no server).
  int Open(Channel& channel, const google::protobuf::MethodDescriptor* method,
           Controller* controller, const GrpcClientStreamOptions& options = {});

  // Sends `request` as the next message. Waits while the stream holds max_buffered_bytes the
  // server's windows did not take. false: the stream ended (Finish() tells why), WritesDone()
  // came before, or the request could not be serialized (the stream is then canceled, EREQUEST).
  bool Write(const google::protobuf::Message& request);
  // Write() without waiting: 0 queued; EAGAIN no room now (WaitWritable()); ECANCELED the stream
  // ended or WritesDone() came; EREQUEST the request could not be serialized.
  int TryWrite(const google::protobuf::Message& request);
  // Waits until a TryWrite() may succeed, at most until `deadline`. 0, ETIMEDOUT or ECANCELED.
  int WaitWritable(std::chrono::steady_clock::time_point deadline);
  // Ends the request side (END_STREAM after the queued messages). true also when the server had
  // already ended the call with its status; false: called before, or the stream failed or was
  // canceled.
  bool WritesDone();

  // The next response message, parsed into *response (cleared first). Waits for it. false: no
  // more messages — the server ended the call (Finish() gives the status), or it failed,
  // was canceled or timed out, or the message could not be parsed (EREQUEST, as for unary calls).
  bool Read(google::protobuf::Message* response);

  // Waits until the call ended and fills the controller: status (grpc-status mapped to the error
  // codes as for unary calls), response_user_fields (headers and trailers), latency, remote side.
  // Messages not read yet are dropped. Returns controller->ErrorCode() (0 = OK). Idempotent.
  int Finish();
  // Ends the call now with ECANCELED (RST_STREAM CANCEL), unless it already ended. Any thread.
  void StartCancel();

 private:
  std::shared_ptr<client::GrpcStreamCall> call_;
};

}  // namespace arenarpc
