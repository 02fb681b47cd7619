#include "client/baidu_std_client_protocol.h"

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <utility>

#include "arenarpc/channel.h"
#include "arenarpc/error_codes.h"
#include "call/controller_access.h"
#include "client/channel_core.h"
#include "net/connection.h"
#include "protocol/meta_builder.h"
#include "protocol/payload_codec.h"
#include "protocol/rpc_meta.pb.h"
#include "stream/stream.h"
#include "stream/stream_host.h"

namespace arenarpc::client {

namespace {

// The meta, payload and attachment of a call; each attempt gets its correlation_id (and timeout).
class BaiduStdRequest final : public ClientRequest {
 public:
  BaiduStdRequest(bool deliver_timeout) : deliver_timeout_(deliver_timeout) {}

  PackedRequest Pack(const AttemptFacts& attempt) override {
    meta.set_correlation_id(attempt.correlation_id);
    PackedRequest packed(std::in_place_index<0>);  // encoded in place: no extra move
    BaiduStdRequestFrame& frame = *std::get_if<0>(&packed);
    if (deliver_timeout_ && attempt.deadline != std::chrono::steady_clock::time_point::max()) {
      frame.deadline = attempt.deadline;
      frame.timeout_ms = TimeoutMsLeft(attempt.deadline, std::chrono::steady_clock::now());
      meta.mutable_request()->set_timeout_ms(frame.timeout_ms);
    } else if (meta.request().has_timeout_ms()) {
      meta.mutable_request()->clear_timeout_ms();  // an earlier attempt's
    }
    net::BufferChain payload_copy, attachment_copy;
    payload_copy.AppendShared(payload);  // retries resend the same bytes
    attachment_copy.AppendShared(attachment);
    protocol::EncodeFrame(meta, std::move(payload_copy), std::move(attachment_copy), &frame.bytes);
    return packed;
  }
  uint64_t payload_bytes() const noexcept override { return payload.size() + attachment.size(); }

  protocol::RpcMeta meta;
  net::BufferChain payload;     // serialized (maybe compressed) request
  net::BufferChain attachment;  // shares the controller's request attachment

 private:
  const bool deliver_timeout_;
};

// A decoded reply frame (spec §6.2).
class BaiduStdReply final : public ClientReply {
 public:
  BaiduStdReply(protocol::Frame& frame, bool attachment_too_large)
      : frame_(frame), attachment_too_large_(attachment_too_large) {}

  uint64_t payload_bytes() const noexcept override {
    return frame_.payload.size() + frame_.attachment.size();
  }

  int ServerError(std::string* text) override {
    const protocol::RpcMeta& meta = frame_.meta;
    if (!meta.has_response() || meta.response().error_code() == 0) return 0;
    *text = meta.response().error_text();
    return meta.response().error_code();
  }

  int ReadInto(Controller& controller, google::protobuf::Message* response,
               size_t max_decompressed_size, std::string* text) override {
    const protocol::RpcMeta& meta = frame_.meta;
    // Split off the attachment (the decoder did), then checksum, decompress, parse straight into
    // the caller's response (its arena, if any).
    if (attachment_too_large_) {
      *text = protocol::AttachmentTooLargeText("response", meta.attachment_size(),
                                               frame_.payload.size());
      return ERESPONSE;
    }
    // Cleared first, like brpc's parse: a reused response does not accumulate. Clear() keeps the
    // message's arena and its allocated repeated elements.
    response->Clear();
    std::string detail;
    const protocol::PayloadEncoding encoding = protocol::PayloadEncoding::Of(meta);
    if (!protocol::MergePayload(encoding, frame_.payload, frame_.attachment, response, &detail,
                                max_decompressed_size)) {
      *text = protocol::ParseFailureText("response", *response, encoding,
                                         frame_.payload.size() + frame_.attachment.size());
      return EREQUEST;
    }
    controller.response_attachment() = std::move(frame_.attachment);
    controller.set_response_compress_type(static_cast<CompressType>(meta.compress_type()));
    for (const auto& [key, value] : meta.user_fields()) {
      controller.response_user_fields()[key] = value;
    }
    if (!stream::OnClientReply(controller, meta)) {
      *text = "The server didn't accept the stream";
      return EREQUEST;
    }
    return 0;
  }

 private:
  protocol::Frame& frame_;
  const bool attachment_too_large_;
};

class BaiduStd final : public ClientProtocol {
 public:
  std::string_view name() const noexcept override { return "baidu_std"; }

  std::unique_ptr<ClientRequest> Prepare(RequestSource source, ChannelCore& core, int* code,
                                         std::string* text) const override {
    *code = EREQUEST;
    Controller& controller = source.controller;
    auto request = std::make_unique<BaiduStdRequest>(core.options().deliver_timeout);
    const int compress_type = static_cast<int>(controller.request_compress_type());
    if (!protocol::SerializePayload(source.request, compress_type, &request->payload, text,
                                    "request")) {
      return nullptr;
    }
    const net::BufferChain& attachment = controller.request_attachment();
    const size_t payload_size = request->payload.size();
    // baidu_std's body_size is 32 bits and attachment_size an int32; leave room for the meta.
    if (attachment.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()) ||
        payload_size + attachment.size() > std::numeric_limits<uint32_t>::max() - (1u << 20)) {
      *text = "request of " + std::to_string(payload_size) + " + attachment of " +
              std::to_string(attachment.size()) + " bytes does not fit a baidu_std frame";
      return nullptr;
    }
    request->attachment.AppendShared(attachment);

    protocol::RequestMetaFields fields;
    fields.service_name = source.method.service()->full_name();
    fields.method_name = source.method.name();
    fields.log_id = controller.log_id();
    fields.request_id = controller.request_id();
    fields.trace_id = controller.trace_id();
    fields.span_id = controller.span_id();
    fields.parent_span_id = controller.parent_span_id();
    fields.user_fields = &controller.request_user_fields();
    std::string& credential = source.credential;
    if (!core.ResolveCredential(&credential)) {
      *code = ERPCAUTH;
      *text = "Fail to generate credential";
      return nullptr;
    }
    if (core.options().auth != nullptr || !credential.empty()) {
      fields.authentication_data = credential;
    }
    protocol::PayloadFields payload_fields;
    payload_fields.compress_type = compress_type;
    payload_fields.attachment_size = request->attachment.size();
    if (!protocol::BuildRequestMeta(fields, payload_fields, request->payload, request->attachment,
                                    &request->meta, text)) {
      return nullptr;
    }
    stream::AddRequestSettings(controller, &request->meta);
    return request;
  }

  std::unique_ptr<ClientSession> NewSession(ClientSessionHost& host,
                                            const ChannelOptions& options) const override {
    return std::make_unique<BaiduStdClientSession>(host, options);
  }
};

}  // namespace

const ClientProtocol& BaiduStdClientProtocol() {
  static const BaiduStd protocol;
  return protocol;
}

BaiduStdClientSession::BaiduStdClientSession(ClientSessionHost& host,
                                             const ChannelOptions& options)
    : host_(host),
      max_body_size_(options.max_body_size),
      max_unwritten_bytes_(options.max_unwritten_bytes),
      decoder_(options.max_body_size),
      stream_decoder_(options.max_body_size) {}

BaiduStdClientSession::~BaiduStdClientSession() = default;

size_t BaiduStdClientSession::RequestBytes(const PackedRequest& request) const noexcept {
  return std::get_if<0>(&request)->bytes.size();
}

void BaiduStdClientSession::OnConnected() { Pump(); }

void BaiduStdClientSession::Submit(int64_t correlation_id, PackedRequest&& request) {
  BaiduStdRequestFrame& frame = *std::get_if<0>(&request);
  if (!host_.connected() || !waiting_.empty() || host_.socket_unsent_bytes() > kHandOffWindow) {
    waiting_bytes_ += frame.bytes.size();
    waiting_.emplace_back(correlation_id, std::move(frame));
    if (host_.connected()) host_.ArmWatchdog(/*fast=*/true);
    return;
  }
  host_.WriteRequest(correlation_id, std::move(frame.bytes));
  if (!host_.watchdog_armed() && !host_.closed()) host_.ArmWatchdog(/*fast=*/false);
}

void BaiduStdClientSession::Pump() {
  while (!waiting_.empty() && !host_.closed()) {
    auto& [correlation_id, frame] = waiting_.front();
    bool drop = !host_.Awaits(correlation_id);  // abandoned (timed out, canceled) meanwhile
    if (!drop && host_.socket_unsent_bytes() > kHandOffWindow) return;
    waiting_bytes_ -= frame.bytes.size();
    // The time it waited here counts against the timeout the server is told. One whose deadline
    // passed is dropped unsent: its call's deadline timer, due now, fails it with ERPCTIMEDOUT.
    if (!drop) drop = RestampTimeout(frame, Clock::now()) == RestampResult::kExpired;
    const int64_t id = correlation_id;
    net::BufferChain bytes = std::move(frame.bytes);
    waiting_.pop_front();
    if (!drop) host_.WriteRequest(id, std::move(bytes));  // may close (and clear waiting_)
  }
}

void BaiduStdClientSession::OnClosed(int code, const std::string& text) {
  waiting_.clear();
  waiting_bytes_ = 0;
  if (stream_host_) stream_host_->Close(code, text);
}

bool BaiduStdClientSession::OnInput(net::BufferChain& input) {
  bool got_frame = false;
  for (;;) {
    const protocol::FrameKind kind = protocol::PeekFrameKind(input);
    if (kind == protocol::FrameKind::kStream) {
      protocol::StreamFrame stream_frame;
      const protocol::DecodeStatus status = stream_decoder_.Next(input, &stream_frame);
      if (status == protocol::DecodeStatus::kFrame) {
        got_frame = true;
        if (!HandleStreamFrame(stream_frame)) return false;
        if (host_.closed()) return true;
        continue;
      }
      if (status == protocol::DecodeStatus::kError) {
        host_.SetCloseReason(EINVAL, "Bad stream frame from " + host_.remote_side() + ": " +
                                         stream_decoder_.error());
        return false;
      }
    }
    protocol::Frame frame;
    const bool not_rpc =
        kind == protocol::FrameKind::kStream || kind == protocol::FrameKind::kNeedMore;
    switch (not_rpc ? protocol::DecodeStatus::kNeedMore : decoder_.Next(input, &frame)) {
      case protocol::DecodeStatus::kNeedMore:
        if (input.empty()) {
          partial_since_ = {};
        } else if (got_frame || partial_since_ == Clock::time_point{}) {
          partial_since_ = Clock::now();  // read_timeout_ms counts per frame
          if (!host_.watchdog_armed()) host_.ArmWatchdog(/*fast=*/false);
        }
        return true;
      case protocol::DecodeStatus::kFrame:
        got_frame = true;
        host_.OnReplyRead();
        Deliver(frame, decoder_.attachment_error());
        if (host_.closed()) return true;  // the frame's call closed us (exclusive): stop reading
        break;
      case protocol::DecodeStatus::kHead:  // never: a client reads whole replies (no report_heads)
      case protocol::DecodeStatus::kError:
        // Like brpc (spec §7.4): pending calls fail with EINVAL, the connection is closed.
        host_.SetCloseReason(
            EINVAL, "Bad response frame from " + host_.remote_side() + ": " + decoder_.error());
        return false;
    }
  }
}

bool BaiduStdClientSession::HandleStreamFrame(protocol::StreamFrame& stream_frame) {
  if (!stream_host_) {
    auto executor = host_.loop().get_executor();
    stream::StreamHost::Limits limits;
    limits.max_unwritten_bytes = max_unwritten_bytes_;
    stream_host_ = std::make_shared<stream::StreamHost>(
        host_.socket(), executor,
        [executor](std::function<void()> turn) { asio::post(executor, std::move(turn)); },
        limits, /*client_side=*/true);
  }
  net::BufferChain reply;
  if (!stream_host_->Dispatch(std::move(stream_frame), &reply)) return true;
  // The first DATA of our stream is the call's reply frame (brpc's accepting reply).
  protocol::FrameDecoder decoder(max_body_size_);
  protocol::Frame frame;
  if (decoder.Next(reply, &frame) != protocol::DecodeStatus::kFrame || !reply.empty()) {
    host_.SetCloseReason(EINVAL, "Bad reply frame in a stream from " + host_.remote_side() +
                                     (decoder.error().empty() ? std::string(": trailing bytes")
                                                              : ": " + decoder.error()));
    return false;
  }
  Deliver(frame, decoder.attachment_error());
  return true;
}

void BaiduStdClientSession::Deliver(protocol::Frame& frame, bool attachment_error) {
  BaiduStdReply reply(frame, attachment_error);
  host_.Complete(frame.meta.correlation_id(), reply);
}

}  // namespace arenarpc::client
