#include "server/baidu_std_server_protocol.h"

#include <asio/post.hpp>

#include <algorithm>

#include "arenarpc/error_codes.h"
#include "protocol/meta_builder.h"
#include "protocol/payload_codec.h"
#include "server/call_task.h"
#include "server/capture_seam.h"
#include "server/error_reply.h"
#include "server/server_call.h"
#include "server/server_state.h"
#include "stream/stream.h"

namespace arenarpc::server {
namespace {
constexpr size_t kMaxKeptMetaBytes = 4096;  // a larger request meta is freed once admitted
}  // namespace

BaiduStdServerProtocol::BaiduStdServerProtocol(const ServerState& state)
    : decoder_(state.config.options.max_body_size),
      stream_decoder_(state.config.options.max_body_size),
      fibers_(&state.runtime->fibers()),
      capture_(state.capture.get()),
      stream_limits_{
          static_cast<size_t>(std::max(0, state.config.options.max_streams_per_connection)),
          state.config.options.max_stream_unconsumed_bytes,
          state.config.options.max_unwritten_bytes},
      stream_registry_(state.streams) {}

std::unique_ptr<ServerProtocol> BaiduStdServerProtocol::Create(ServerState& state,
                                                               ProtocolOwner& /*owner*/,
                                                               bool /*internal_port*/) {
  return std::make_unique<BaiduStdServerProtocol>(state);
}

ServerProtocol::Step BaiduStdServerProtocol::Next(net::Connection& connection,
                                                  net::BufferChain& input,
                                                  std::chrono::steady_clock::time_point /*read_at*/,
                                                  Decoded* decoded) {
  switch (protocol::PeekFrameKind(input)) {
    case protocol::FrameKind::kNeedMore:
      return Step::kNeedMore;
    case protocol::FrameKind::kStream:
      return NextStreamFrame(connection, input);
    default:
      break;  // "PRPC", or bytes the frame decoder rejects
  }
  // The meta stays with the decoder, which clears it for the next frame and so reuses its parts
  // (its strings' buffers) — unless it was large: a connection keeps no more than that.
  if (frame_.meta_size > kMaxKeptMetaBytes && !decoder_.head_reported()) {
    frame_.meta = protocol::RpcMeta();
    frame_.meta_size = 0;
  }
  const protocol::DecodeStatus status = decoder_.Next(input, &frame_, /*report_heads=*/true);
  if (status == protocol::DecodeStatus::kNeedMore) return Step::kNeedMore;
  if (status == protocol::DecodeStatus::kError) return Step::kMalformed;

  // The call's head points into frame_.meta (kept until the next frame); all else moves out.
  const protocol::RpcMeta& meta = frame_.meta;
  const protocol::RpcRequestMeta& request_meta = meta.request();  // absent: empty names
  DecodedCall& call = decoded->call;
  CallHead& head = call.head;
  head.service_name = request_meta.service_name();
  head.method_name = request_meta.method_name();
  head.key = meta.correlation_id();
  head.credential = meta.authentication_data();
  if (request_meta.has_timeout_ms()) head.timeout_ms = request_meta.timeout_ms();
  const size_t request_size = frame_.body_size - frame_.meta_size;
  if (decoder_.attachment_error()) {
    invalid_text_ = protocol::AttachmentTooLargeText("request", meta.attachment_size(),
                                                     request_size);
    head.invalid_code = EREQUEST;
    head.invalid_text = invalid_text_;
  }
  if (status == protocol::DecodeStatus::kHead) return Step::kHead;
  call.capture = CaptureBaiduStd(capture_, meta, frame_.payload, frame_.attachment);
  CallFields& fields = call.fields;
  fields.log_id = request_meta.log_id();
  if (request_meta.has_request_id()) fields.request_id = request_meta.request_id();
  if (request_meta.trace_id() != 0) {
    fields.trace.trace_id = static_cast<uint64_t>(request_meta.trace_id());
    fields.trace.span_id = static_cast<uint64_t>(request_meta.span_id());
    fields.trace.parent_span_id = static_cast<uint64_t>(request_meta.parent_span_id());
  }
  fields.request_compress_type = meta.compress_type();
  for (const auto& [key, value] : meta.user_fields()) fields.user_fields.emplace_back(key, value);
  // Most requests carry none: an empty chain into an empty one is no move to make.
  if (!frame_.attachment.empty() || !fields.attachment.empty()) {
    fields.attachment = std::move(frame_.attachment);
  }
  if (meta.has_stream_settings()) {
    fields.stream_offer =
        std::make_unique<StreamOffer>(StreamOffer{meta.stream_settings(), StreamHostOf(connection)});
  }
  // Member by member: a temporary RequestPayload would be moved in and destroyed (its
  // BufferChain's move and destructor, ~100 instructions a call). The rest is as reset.
  call.payload.encoding = protocol::PayloadEncoding::Of(meta);
  call.payload.bytes = std::move(frame_.payload);
  call.payload.request_size = request_size;
  call.payload.body = RequestBody::kRpcPayload;
  call.payload.json = false;
  return Step::kCall;
}

bool BaiduStdServerProtocol::PackReply(ServerCall& call, const google::protobuf::Message& response,
                                       net::BufferChain* frame) {
  Controller& controller = call.controller();
  int code = controller.ErrorCode();
  std::string error_text;
  if (controller.Failed()) {
    error_text = protocol::FormatErrorText(protocol::ServerIdentity(call.connection().local_side()),
                                           code, controller.ErrorText());
  } else {
    net::BufferChain payload;
    std::string error;
    const int compress_type = static_cast<int>(controller.response_compress_type());
    protocol::PayloadFields fields;
    fields.compress_type = compress_type;
    fields.attachment_size = controller.response_attachment().size();
    protocol::RpcMeta meta;
    if (protocol::SerializePayload(response, compress_type, &payload, &error, "response") &&
        protocol::BuildResponseMeta(call.correlation_id(), fields, payload,
                                    controller.response_attachment(),
                                    &controller.response_user_fields(), &meta, &error)) {
      std::shared_ptr<stream::Stream> accepted = stream::AcceptedStream(controller);
      if (!accepted) {
        protocol::EncodeFrame(meta, std::move(payload),
                              std::move(controller.response_attachment()), frame);
        return true;
      }
      // As brpc: the accepting reply carries our settings and travels as the first DATA frame
      // of the client's stream; the stream starts once it is written (Reply).
      accepted->FillSettings(meta.mutable_stream_settings());
      net::BufferChain rpc_frame;
      protocol::EncodeFrame(meta, std::move(payload), std::move(controller.response_attachment()),
                            &rpc_frame);
      frame->Append(accepted->WrapReply(std::move(rpc_frame)));
      {
        std::lock_guard lock(streams_mutex_);
        accepted_.emplace(call.correlation_id(), std::move(accepted));
      }
      replies_with_streams_.fetch_add(1, std::memory_order_release);
      return true;
    }
    // A reply that cannot be serialized becomes an ERESPONSE failure (spec §5.4).
    code = ERESPONSE;
    error_text = protocol::FormatErrorText(protocol::ServerIdentity(call.connection().local_side()),
                                           code, error);
  }
  if (std::shared_ptr<stream::Stream> accepted = stream::AcceptedStream(controller)) {
    accepted->Terminate(protocol::WireErrorCode(code), "the call failed: " + error_text,
                        /*send_close=*/false);  // a failed call does not accept its stream
  }
  protocol::RpcMeta meta;
  protocol::BuildErrorResponseMeta(call.correlation_id(), protocol::WireErrorCode(code), error_text,
                                   &controller.response_user_fields(), &meta);
  protocol::EncodeFrame(meta, net::BufferChain(), net::BufferChain(), frame);
  return false;
}

void BaiduStdServerProtocol::Reply(net::Connection& connection, ServerCall& call,
                                   const google::protobuf::Message& response) {
  net::BufferChain frame;
  const bool ok = PackReply(call, response, &frame);
  call.OnReplyPacked(ok, frame);
  connection.Write(std::move(frame));
  if (replies_with_streams_.load(std::memory_order_acquire) > 0) {
    ConnectAcceptedStream(call.correlation_id());
  }
}

void BaiduStdServerProtocol::ConnectAcceptedStream(int64_t key) {
  std::shared_ptr<stream::Stream> accepted;
  {
    std::lock_guard lock(streams_mutex_);
    auto it = accepted_.find(key);
    if (it == accepted_.end()) return;
    accepted = std::move(it->second);
    accepted_.erase(it);
  }
  replies_with_streams_.fetch_sub(1, std::memory_order_relaxed);
  accepted->Connect(nullptr);
}

size_t BaiduStdServerProtocol::DropRequest(net::BufferChain& input) {
  return decoder_.Drop(input);
}

size_t BaiduStdServerProtocol::MissingBytes(const net::BufferChain& input) const noexcept {
  return stream_error_ ? 0 : decoder_.missing(input);
}

ServerProtocol::Step BaiduStdServerProtocol::NextStreamFrame(net::Connection& connection,
                                                             net::BufferChain& input) {
  protocol::StreamFrame frame;
  switch (stream_decoder_.Next(input, &frame)) {
    case protocol::DecodeStatus::kNeedMore:
      return Step::kNeedMore;
    case protocol::DecodeStatus::kHead:  // never: stream frames are not reported by their head
    case protocol::DecodeStatus::kError:
      stream_error_ = true;
      return Step::kMalformed;
    case protocol::DecodeStatus::kFrame:
      break;
  }
  net::BufferChain unused;
  StreamHostOf(connection)->Dispatch(std::move(frame), &unused);
  return Step::kAnswered;
}

std::shared_ptr<stream::StreamHost> BaiduStdServerProtocol::StreamHostOf(
    net::Connection& connection) {
  std::shared_ptr<stream::StreamHost> host;
  bool closed = false;
  {
    std::lock_guard lock(streams_mutex_);
    if (!stream_host_) {
      asio::any_io_executor executor = connection.executor();
      fiber::Scheduler* fibers = fibers_;
      // Handler turns run on fibers (a StreamWait inside suspends); past max_fibers on the
      // connection's thread.
      auto runner = [fibers, executor](std::function<void()> turn) {
        if (fibers != nullptr && fibers->Spawn(turn)) return;
        asio::post(executor, std::move(turn));
      };
      stream_host_ = std::make_shared<stream::StreamHost>(connection.weak_from_this(), executor,
                                                          std::move(runner), stream_limits_,
                                                          /*client_side=*/false, stream_registry_);
    }
    host = stream_host_;
    closed = closed_;
  }
  if (closed) host->Close(EEOF, "the connection is closed");
  return host;
}

void BaiduStdServerProtocol::OnClosed() {
  std::shared_ptr<stream::StreamHost> host;
  std::unordered_multimap<int64_t, std::shared_ptr<stream::Stream>> accepted;
  {
    std::lock_guard lock(streams_mutex_);
    closed_ = true;
    host = stream_host_;
    accepted.swap(accepted_);
  }
  if (host) host->Close(EEOF, "the connection of the stream closed");
  for (auto& [key, stream] : accepted) {
    stream->Terminate(EEOF, "the connection of the stream closed", /*send_close=*/false);
  }
}

void BaiduStdServerProtocol::SendError(net::Connection& connection, int64_t key,
                                       const CallError& error) {
  WriteErrorReply(connection, key, error.code, error.text);
}

}  // namespace arenarpc::server
