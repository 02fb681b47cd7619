#include "client/grpc_client_protocol.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "arenarpc/channel.h"
#include "arenarpc/error_codes.h"
#include "call/trace_headers.h"
#include "client/channel_core.h"
#include "client/grpc_reply.h"
#include "client/grpc_stream_call.h"
#include "net/connection.h"
#include "protocol/compression.h"
#include "protocol/h2/grpc_wire.h"
#include "protocol/payload_codec.h"

namespace arenarpc::client {

namespace {

// The path, metadata and message of a unary call; each attempt gets its authority and deadline.
class GrpcRequest final : public ClientRequest {
 public:
  PackedRequest Pack(const AttemptFacts& attempt) override {
    PackedRequest packed(std::in_place_index<1>);  // built in place: no extra move
    protocol::h2::GrpcClientRequest& request = *std::get_if<1>(&packed);
    request.path = path;
    request.authority = attempt.authority;
    request.deadline = attempt.deadline;  // grpc-timeout is stamped when the stream opens
    request.gzip = gzip;
    request.metadata = metadata;
    request.message.AppendShared(message);  // retries resend the same bytes
    return packed;
  }
  uint64_t payload_bytes() const noexcept override { return message.size(); }

  std::string path;  // "/pkg.Service/Method"
  bool gzip = false;
  protocol::h2::Metadata metadata;  // the request's user fields, then `authorization`
  net::BufferChain message;         // serialized (maybe gzip-compressed)
};

// A finished call of the session.
class GrpcReply final : public ClientReply {
 public:
  explicit GrpcReply(protocol::h2::GrpcClientResponse& response) : response_(response) {}

  int ServerError(std::string* text) override { return GrpcOutcome(response_, text); }
  void ReadFailure(Controller& controller) override {
    controller.set_grpc_status_details(std::move(response_.status_details));
  }
  uint64_t payload_bytes() const noexcept override { return response_.message.size(); }

  int ReadInto(Controller& controller, google::protobuf::Message* response,
               size_t max_decompressed_size, std::string* text) override {
    CompressType compress_type = COMPRESS_TYPE_NONE;
    if (const int code = ParseGrpcMessage(response_.compressed, response_.encoding,
                                          response_.message, max_decompressed_size, response,
                                          &compress_type, text);
        code != 0) {
      return code;
    }
    controller.set_response_compress_type(compress_type);
    if (!controller.grpc_status_details().empty()) controller.set_grpc_status_details({});
    for (auto& [key, value] : response_.metadata) {
      controller.response_user_fields()[key] = std::move(value);
    }
    return 0;
  }

 private:
  protocol::h2::GrpcClientResponse& response_;
};

class Grpc final : public ClientProtocol {
 public:
  std::string_view name() const noexcept override { return "grpc"; }

  std::unique_ptr<ClientRequest> Prepare(RequestSource source, ChannelCore& core, int* code,
                                         std::string* text) const override {
    *code = EREQUEST;
    Controller& controller = source.controller;
    const int compress_type = static_cast<int>(controller.request_compress_type());
    if (compress_type != 0 && compress_type != static_cast<int>(COMPRESS_TYPE_GZIP)) {
      *text = std::string("gRPC compresses with gzip only, not ") +
              protocol::CompressTypeName(compress_type);
      return nullptr;
    }
    if (!controller.request_attachment().empty()) {
      *text = "gRPC has no attachments: request_attachment must be empty";
      return nullptr;
    }
    auto request = std::make_unique<GrpcRequest>();
    if (!protocol::SerializePayload(source.request, compress_type, &request->message, text,
                                    "request")) {
      return nullptr;
    }
    if (!core.ResolveCredential(&source.credential)) {
      *code = ERPCAUTH;
      *text = "Fail to generate credential";
      return nullptr;
    }
    request->path = "/" + source.method.service()->full_name() + "/" + source.method.name();
    request->gzip = compress_type == static_cast<int>(COMPRESS_TYPE_GZIP);
    request->metadata.assign(controller.request_user_fields().begin(),
                             controller.request_user_fields().end());
    if (!source.credential.empty()) {
      request->metadata.emplace_back(protocol::h2::kAuthorizationMetadata,
                                     std::move(source.credential));
    }
    internal::AppendTraceHeaders(controller.trace(), &request->metadata);
    return request;
  }

  std::unique_ptr<ClientSession> NewSession(ClientSessionHost& host,
                                            const ChannelOptions& options) const override {
    return std::make_unique<GrpcClientProtocolSession>(host, options);
  }
};

protocol::h2::GrpcClientSession::Limits LimitsOf(const ChannelOptions& options) {
  protocol::h2::GrpcClientSession::Limits limits;
  limits.max_concurrent_streams = options.grpc_max_concurrent_streams;
  limits.max_header_list_bytes = options.grpc_max_header_list_bytes;
  limits.max_message_bytes = options.max_body_size;
  limits.response_bytes_budget = options.max_body_size;
  limits.stream_window = options.grpc_stream_window;
  limits.connection_window = options.grpc_connection_window;
  limits.max_frame_size = options.grpc_max_frame_size;
  limits.max_window = options.grpc_max_window;
  return limits;
}

}  // namespace

const ClientProtocol& GrpcClientProtocol() {
  static const Grpc protocol;
  return protocol;
}

GrpcClientProtocolSession::GrpcClientProtocolSession(ClientSessionHost& host,
                                                     const ChannelOptions& options)
    : host_(host), h2_(LimitsOf(options)) {}

GrpcClientProtocolSession::~GrpcClientProtocolSession() = default;

size_t GrpcClientProtocolSession::RequestBytes(const PackedRequest& request) const noexcept {
  return std::get_if<1>(&request)->message.size();
}

void GrpcClientProtocolSession::Submit(int64_t correlation_id, PackedRequest&& request) {
  h2_.Start(correlation_id, std::move(*std::get_if<1>(&request)));
  Flush();
  if (!host_.watchdog_armed() && !host_.closed()) host_.ArmWatchdog(/*fast=*/false);
}

void GrpcClientProtocolSession::Abandon(int64_t correlation_id) {
  h2_.Cancel(correlation_id);  // RST_STREAM CANCEL, or dropped while it waits for a stream
  Flush();
}

bool GrpcClientProtocolSession::OnInput(net::BufferChain& input) {
  const bool ok = h2_.Receive(input);
  input.clear();
  host_.OnReplyRead();
  Flush();  // on a bad input: the GOAWAY goes out, then the connection closes
  return ok || host_.closed();
}

void GrpcClientProtocolSession::OnClosed(int code, const std::string& text) {
  std::unordered_map<int64_t, StreamEntry> streams = std::move(streams_);
  streams_.clear();
  for (auto& [tag, entry] : streams) entry.call->OnFailed(code, text);
}

void GrpcClientProtocolSession::Flush() {
  if (h2_.goaway_received()) host_.Retire();  // before the refused calls retry elsewhere
  if (host_.connected() && !host_.closed()) {
    net::BufferChain out;
    h2_.TakeOutput(&out);
    const std::vector<int64_t> started = h2_.TakeStarted();  // their HEADERS are in `out`
    for (int64_t tag : h2_.TakeDrained()) {
      auto it = streams_.find(tag);
      if (it != streams_.end()) it->second.call->OnTaken(it->second.sent - h2_.unsent_bytes(tag));
    }
    host_.WriteOutput(std::move(out), started);  // may close (OnClosed) right here
  }
  protocol::h2::GrpcStreamMessage message;
  while (!host_.closed() && h2_.PopMessage(&message)) {
    auto it = streams_.find(message.tag);
    if (it != streams_.end()) it->second.call->OnMessage(std::move(message));
  }
  protocol::h2::GrpcClientResponse response;
  while (!host_.closed() && h2_.PopResponse(&response)) {
    if (auto stream = streams_.find(response.tag); stream != streams_.end()) {
      std::shared_ptr<GrpcStreamCall> call = std::move(stream->second.call);
      streams_.erase(stream);
      host_.ReleaseIfIdle();  // before the caller hears of the end: its next call finds it
      call->OnEnd(response);
      continue;
    }
    if (response.unprocessed) {  // never reached the server: may go again, elsewhere
      host_.FailAttempt(response.tag, response.error_code, response.error_text, false);
    } else if (response.error_code == EFAILEDSOCKET) {  // the stream broke after the request went
      host_.FailAttempt(response.tag, response.error_code, response.error_text, true);
    } else {
      GrpcReply reply(response);
      host_.Complete(response.tag, reply);
    }
  }
  if (host_.closed() || !host_.connected()) return;
  if (h2_.failed()) {
    host_.CloseSocket(EINVAL, "Bad HTTP/2 from " + host_.remote_side() + ": " + h2_.error());
  } else if (h2_.goaway_received() && h2_.Idle()) {
    host_.CloseSocket(EFAILEDSOCKET,
                      "Connection to " + host_.remote_side() + " closed after GOAWAY");
  }
}

void GrpcClientProtocolSession::OpenStream(std::shared_ptr<GrpcStreamCall> call, int64_t tag,
                                           protocol::h2::GrpcClientRequest request) {
  if (host_.closed()) {
    call->OnFailed(host_.close_code(), host_.close_text());
    return;
  }
  if (!streams_.try_emplace(tag, StreamEntry{std::move(call), 0}).second) {
    return;  // needs 2^32 calls between two still in flight
  }
  h2_.Start(tag, std::move(request));
  Flush();
}

void GrpcClientProtocolSession::SendStream(int64_t tag, net::BufferChain message, bool gzip) {
  auto it = streams_.find(tag);
  if (it == streams_.end() || host_.closed()) return;
  const size_t bytes = protocol::h2::kMessagePrefixSize + message.size();
  if (h2_.Send(tag, std::move(message), gzip)) it->second.sent += bytes;
  Flush();
}

void GrpcClientProtocolSession::CloseStreamSend(int64_t tag) {
  if (host_.closed() || !streams_.contains(tag)) return;
  h2_.CloseSend(tag);
  Flush();
}

void GrpcClientProtocolSession::ReleaseStream(int64_t tag, size_t bytes) {
  if (host_.closed() || !streams_.contains(tag)) return;
  h2_.Release(tag, bytes);
  Flush();  // the WINDOW_UPDATE
}

void GrpcClientProtocolSession::CancelStream(int64_t tag) {
  if (host_.closed() || streams_.erase(tag) == 0) return;
  h2_.Cancel(tag);  // RST_STREAM CANCEL, or dropped while it waits for a stream
  Flush();
  if (host_.exclusive() && !host_.closed() && host_.connected()) {  // as an abandoned call
    host_.CloseSocket(EFAILEDSOCKET, "Connection closed after its gRPC stream was canceled");
  }
}

}  // namespace arenarpc::client
