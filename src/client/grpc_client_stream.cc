#include "arenarpc/grpc_client_stream.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "arenarpc/authenticator.h"
#include "arenarpc/channel.h"
#include "arenarpc/error_codes.h"
#include "call/controller_access.h"
#include "call/trace_headers.h"
#include "call/span_record.h"
#include "call/trace_propagation.h"
#include "client/channel_core.h"
#include "client/client_connection.h"
#include "client/connection_manager.h"
#include "client/grpc_client_protocol.h"
#include "client/grpc_reply.h"
#include "client/grpc_stream_call.h"
#include "client/sub_channel.h"
#include "protocol/payload_codec.h"

namespace arenarpc {
namespace client {

namespace {

// Runs `work` on the stream's gRPC session, on its connection's loop, if the connection lives.
template <class Work>
void InSession(const std::weak_ptr<ClientConnection>& connection, Work work) {
  if (auto live = connection.lock()) {
    live->RunInSession([work = std::move(work)](ClientSession& session) mutable {
      work(GrpcSessionOf(session));
    });
  }
}

}  // namespace

GrpcStreamCall::GrpcStreamCall(std::shared_ptr<ChannelCore> core,
                               const google::protobuf::MethodDescriptor* method,
                               Controller* controller, const GrpcClientStreamOptions& options)
    : core_(std::move(core)),
      method_(method),
      controller_(controller),
      options_(options),
      gzip_(controller->request_compress_type() == COMPRESS_TYPE_GZIP) {}

GrpcStreamCall::~GrpcStreamCall() = default;

int GrpcStreamCall::Open() {
  const auto fail = [this](int code, std::string text) {
    {
      std::lock_guard lock(mutex_);
      EndLocked(code, std::move(text));
    }
    return Finish();
  };
  const ChannelOptions& options = core_->options();
  if (!core_->grpc()) {
    return fail(EINVAL, "a gRPC stream needs a channel with protocol \"grpc\"");
  }
  const CompressType compress = controller_->request_compress_type();
  if (compress != COMPRESS_TYPE_NONE && compress != COMPRESS_TYPE_GZIP) {
    return fail(EINVAL, "gRPC compresses with gzip only");
  }
  std::string credential;
  if (!core_->ResolveCredential(&credential)) {
    return fail(ERPCAUTH, "Fail to generate credential");
  }
  if (core_->needs_request_code() && !controller_->has_request_code()) {
    return fail(EINVAL, "the load balancer of " + core_->remote_side() +
                            " hashes Controller::set_request_code(), which this stream did not set");
  }
  server_ = core_->SelectServer(controller_->request_code(), {});
  if (!server_) return fail(EHOSTDOWN, "no server of " + core_->remote_side() + " is in rotation");
  std::shared_ptr<ClientConnection> connection = server_->connections().Acquire();
  if (!connection) {
    return fail(EFAILEDSOCKET, "Channel to " + server_->remote_side() + " is shutting down");
  }
  connection_ = connection;
  tag_ = MakeCorrelationId(core_->NextCallSlot(), 0);

  protocol::h2::GrpcClientRequest request;
  request.streaming = true;
  request.path = "/" + method_->service()->full_name() + "/" + method_->name();
  request.authority = server_->remote_side();
  request.gzip = gzip_;
  request.metadata.assign(controller_->request_user_fields().begin(),
                          controller_->request_user_fields().end());
  if (!credential.empty())
    request.metadata.emplace_back(protocol::h2::kAuthorizationMetadata, std::move(credential));
  internal::InheritTrace(*controller_);  // a stream opened from a handler continues its trace
  internal::AppendTraceHeaders(controller_->trace(), &request.metadata);
  if ((span_ = internal::SampleClientSpan(start_))) {
    span_->SetTrace(controller_->trace());
    span_->Mark(SpanPhase::kStarted, start_);
    span_->span().request_compression = gzip_ ? "gzip" : "none";
  }
  const int64_t timeout_ms =
      controller_->timeout_ms() > 0 ? controller_->timeout_ms() : options.timeout_ms;
  if (timeout_ms > 0) {
    request.deadline = start_ + std::chrono::milliseconds(timeout_ms);
    deadline_timer_ = std::make_unique<asio::steady_timer>(core_->loops().Next());
    deadline_timer_->expires_at(start_ + std::chrono::milliseconds(timeout_ms));
    deadline_timer_->async_wait([self = shared_from_this()](const asio::error_code& error) {
      if (!error) self->OnDeadline();
    });
  }
  InSession(connection_, [call = shared_from_this(), tag = tag_, request = std::move(request)](
                             GrpcClientProtocolSession& session) mutable {
    session.OpenStream(std::move(call), tag, std::move(request));
  });
  if (span_) span_->Mark(SpanPhase::kSent);
  return 0;
}

bool GrpcStreamCall::EndLocked(int code, std::string text) {
  if (ended_) return false;
  ended_ = true;
  code_ = code;
  text_ = std::move(text);
  if (deadline_timer_) deadline_timer_->cancel();
  cv_.notify_all();
  return true;
}

void GrpcStreamCall::Cancel(int code, const std::string& text) {
  {
    std::lock_guard lock(mutex_);
    if (!EndLocked(code, text)) return;
    inbox_.clear();  // Read() returns false from now on
  }
  InSession(connection_, [tag = tag_](GrpcClientProtocolSession& session) {
    session.CancelStream(tag);
  });
}

void GrpcStreamCall::OnDeadline() {
  const int64_t timeout_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 Clock::now() - start_)
                                 .count();
  Cancel(ERPCTIMEDOUT, "Reached timeout=" + std::to_string(timeout_ms) + "ms @" +
                           (server_ ? server_->remote_side() : core_->remote_side()));
}

int GrpcStreamCall::TryWrite(const google::protobuf::Message& request, bool wait) {
  net::BufferChain payload;
  std::string error;
  if (!protocol::SerializePayload(request, static_cast<int>(gzip_ ? COMPRESS_TYPE_GZIP : COMPRESS_TYPE_NONE),
                                  &payload, &error, "request")) {
    Cancel(EREQUEST, error);
    return EREQUEST;
  }
  const uint64_t bytes = protocol::h2::kMessagePrefixSize + payload.size();
  {
    std::unique_lock lock(mutex_);
    const auto room = [this] {
      return ended_ || writes_done_ || written_bytes_ - taken_bytes_ < options_.max_buffered_bytes;
    };
    if (wait) {
      cv_.wait(lock, room);
    } else if (!room()) {
      return EAGAIN;
    }
    if (ended_ || writes_done_) return ECANCELED;
    written_bytes_ += bytes;
    if (span_) span_->span().request_bytes += bytes;
  }
  InSession(connection_, [tag = tag_, payload = std::move(payload), gzip = gzip_](
                             GrpcClientProtocolSession& session) mutable {
    session.SendStream(tag, std::move(payload), gzip);
  });
  return 0;
}

int GrpcStreamCall::WaitWritable(Clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  const bool ready = cv_.wait_until(lock, deadline, [this] {
    return ended_ || writes_done_ || written_bytes_ - taken_bytes_ < options_.max_buffered_bytes;
  });
  if (ended_ || writes_done_) return ECANCELED;
  return ready ? 0 : ETIMEDOUT;
}

bool GrpcStreamCall::WritesDone() {
  {
    std::lock_guard lock(mutex_);
    if (writes_done_) return false;
    writes_done_ = true;
    cv_.notify_all();
    // A server may end the call before the client half-closes (a server stream's handler needs
    // one message): nothing is left to send, and that is not a failure, as in gRPC C++.
    if (ended_) return server_ended_;
  }
  InSession(connection_, [tag = tag_](GrpcClientProtocolSession& session) {
    session.CloseStreamSend(tag);
  });
  return true;
}

bool GrpcStreamCall::Read(google::protobuf::Message* response) {
  protocol::h2::GrpcStreamMessage message;
  {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [this] { return !inbox_.empty() || ended_; });
    if (inbox_.empty()) return false;
    message = std::move(inbox_.front());
    inbox_.pop_front();
  }
  InSession(connection_, [tag = tag_, bytes = message.wire_bytes](
                             GrpcClientProtocolSession& session) { session.ReleaseStream(tag, bytes); });
  CompressType compress_type = COMPRESS_TYPE_NONE;
  std::string text;
  if (const int code = ParseGrpcMessage(message.compressed, message.encoding, message.message,
                                        core_->options().max_decompressed_size, response,
                                        &compress_type, &text);
      code != 0) {
    Cancel(code, text);
    return false;
  }
  return true;
}

int GrpcStreamCall::Finish() {
  std::unique_lock lock(mutex_);
  if (!finished_) {
    for (;;) {  // unread messages are dropped, so that the server's window reopens
      size_t dropped = 0;
      for (const auto& message : inbox_) dropped += message.wire_bytes;
      inbox_.clear();
      if (dropped > 0) {
        InSession(connection_, [tag = tag_, dropped](GrpcClientProtocolSession& session) {
          session.ReleaseStream(tag, dropped);
        });
      }
      if (ended_) break;
      cv_.wait(lock, [this] { return !inbox_.empty() || ended_; });
    }
    finished_ = true;
    if (code_ != 0) controller_->SetFailed(code_, "[E" + std::to_string(code_) + "]" + text_);
    if (code_ != 0) controller_->set_grpc_status_details(std::move(status_details_));
    for (auto& [key, value] : metadata_) controller_->response_user_fields()[key] = std::move(value);
    metadata_.clear();
    internal::ControllerAccess::set_latency_us(
        *controller_,
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start_).count());
    internal::ControllerAccess::set_remote_side(
        *controller_, server_ ? server_->remote_side() : core_->remote_side());
    if (code_ != 0) core_->counters().failed_calls.fetch_add(1, std::memory_order_relaxed);
    if (span_) {
      Span& span = span_->span();
      span.method = method_->full_name();
      span.protocol = "h2:grpc stream";
      span.peer = controller_->remote_side();
      if (code_ != 0) span_->SetError(code_, text_);
      span_->Finish();
      span_.reset();
    }
  }
  return controller_->ErrorCode();
}

void GrpcStreamCall::OnMessage(protocol::h2::GrpcStreamMessage&& message) {
  std::lock_guard lock(mutex_);
  if (ended_) return;  // canceled here: the session forgets the stream
  if (span_) {
    if (!span_->reached(SpanPhase::kReplyReceived)) span_->Mark(SpanPhase::kReplyReceived);
    span_->span().response_bytes += message.wire_bytes;
  }
  inbox_.push_back(std::move(message));
  cv_.notify_all();
}

void GrpcStreamCall::OnTaken(uint64_t taken_bytes) {
  std::lock_guard lock(mutex_);
  taken_bytes_ = std::max(taken_bytes_, taken_bytes);
  cv_.notify_all();
}

void GrpcStreamCall::OnEnd(protocol::h2::GrpcClientResponse& response) {
  std::string text;
  const int code = GrpcOutcome(response, &text);
  std::lock_guard lock(mutex_);
  if (!EndLocked(code, std::move(text))) return;
  metadata_ = std::move(response.metadata);
  status_details_ = std::move(response.status_details);
  server_ended_ = true;
}

void GrpcStreamCall::OnFailed(int code, const std::string& text) {
  std::lock_guard lock(mutex_);
  EndLocked(code, text);
}

}  // namespace client

GrpcClientStream::GrpcClientStream() = default;

GrpcClientStream::~GrpcClientStream() {
  if (call_) call_->Cancel(ECANCELED, "the GrpcClientStream was destroyed");
}

int GrpcClientStream::Open(Channel& channel, const google::protobuf::MethodDescriptor* method,
                           Controller* controller, const GrpcClientStreamOptions& options) {
  if (call_ || !channel.core_ || method == nullptr) {
    const char* why = call_ ? "the GrpcClientStream is open already"
                            : (method == nullptr ? "no method" : "the channel is not initialized");
    controller->SetFailed(EINVAL, std::string("[E") + std::to_string(EINVAL) + "]" + why);
    return EINVAL;
  }
  call_ = std::make_shared<client::GrpcStreamCall>(channel.core_, method, controller, options);
  return call_->Open();
}

bool GrpcClientStream::Write(const google::protobuf::Message& request) {
  return call_ && call_->TryWrite(request, /*wait=*/true) == 0;
}

int GrpcClientStream::TryWrite(const google::protobuf::Message& request) {
  return call_ ? call_->TryWrite(request, /*wait=*/false) : ECANCELED;
}

int GrpcClientStream::WaitWritable(std::chrono::steady_clock::time_point deadline) {
  return call_ ? call_->WaitWritable(deadline) : ECANCELED;
}

bool GrpcClientStream::WritesDone() { return call_ && call_->WritesDone(); }

bool GrpcClientStream::Read(google::protobuf::Message* response) {
  return call_ && call_->Read(response);
}

int GrpcClientStream::Finish() { return call_ ? call_->Finish() : EINVAL; }

void GrpcClientStream::StartCancel() {
  if (call_) call_->Cancel(ECANCELED, "the gRPC stream was canceled");
}

}  // namespace arenarpc
