#pragma once
// GrpcStreamCall: the state of one GrpcClientStream (include/arenarpc/grpc_client_stream.h),
// shared by the caller's threads/fibers and the loop of the connection that carries it. The
// caller side waits on cv_ under mutex_; the loop side (On* methods) fills it in.
//
// Memory: received messages wait in inbox_ until Read(); the session reopens the stream's window
// only once every handed-over message was read (Release), so inbox_ + the session's bytes of the
// stream stay under max_body_size + 5 + grpc_stream_window. Request bytes not taken by the
// server's windows stay under max_buffered_bytes + one message.

#include <asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "arenarpc/controller.h"
#include "arenarpc/fiber.h"
#include "arenarpc/grpc_client_stream.h"
#include "protocol/h2/grpc_client_session.h"

namespace arenarpc::internal {
class SpanRecord;
}  // namespace arenarpc::internal

namespace google::protobuf {
class Message;
class MethodDescriptor;
}  // namespace google::protobuf

namespace arenarpc::client {

class ChannelCore;
class ClientConnection;
class SubChannel;

class GrpcStreamCall : public std::enable_shared_from_this<GrpcStreamCall> {
 public:
  using Clock = std::chrono::steady_clock;

  GrpcStreamCall(std::shared_ptr<ChannelCore> core, const google::protobuf::MethodDescriptor* method,
                 Controller* controller, const GrpcClientStreamOptions& options);
  ~GrpcStreamCall();

  int Open();
  int TryWrite(const google::protobuf::Message& request, bool wait);
  int WaitWritable(Clock::time_point deadline);
  bool WritesDone();
  bool Read(google::protobuf::Message* response);
  int Finish();
  void Cancel(int code, const std::string& text);

  // Loop side (the connection's thread).
  void OnMessage(protocol::h2::GrpcStreamMessage&& message);
  // Total request bytes the session's windows have taken so far.
  void OnTaken(uint64_t taken_bytes);
  void OnEnd(protocol::h2::GrpcClientResponse& response);
  void OnFailed(int code, const std::string& text);

 private:
  // Ends the call with a local error (under mutex_); false if it had ended already.
  bool EndLocked(int code, std::string text);
  void OnDeadline();

  const std::shared_ptr<ChannelCore> core_;
  const google::protobuf::MethodDescriptor* const method_;
  Controller* const controller_;
  const GrpcClientStreamOptions options_;
  const Clock::time_point start_ = Clock::now();
  const bool gzip_;
  int64_t tag_ = 0;
  std::shared_ptr<SubChannel> server_;
  std::weak_ptr<ClientConnection> connection_;
  std::unique_ptr<asio::steady_timer> deadline_timer_;

  std::mutex mutex_;
  fiber::ConditionVariable cv_;  // a waiting fiber suspends, a plain thread blocks
  std::deque<protocol::h2::GrpcStreamMessage> inbox_;
  uint64_t written_bytes_ = 0;  // handed to the connection (prefixes included)
  uint64_t taken_bytes_ = 0;    // of those, taken by the server's windows
  bool writes_done_ = false;
  bool ended_ = false;          // no more messages come; status below
  bool server_ended_ = false;   // ended by the server's trailers (its status), not a failure
  bool finished_ = false;       // Finish() filled the controller
  int code_ = 0;
  std::string text_;
  protocol::h2::Metadata metadata_;
  std::string status_details_;  // grpc-status-details-bin of the server's failed end
  // rpcz: set when the stream is sampled; its bytes counted under mutex_, ended by Finish().
  std::shared_ptr<internal::SpanRecord> span_;
};

}  // namespace arenarpc::client
