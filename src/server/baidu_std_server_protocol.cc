#include "server/baidu_std_server_protocol.h"

#include "arenarpc/error_codes.h"
#include "call/controller_access.h"
#include "protocol/meta_builder.h"
#include "protocol/payload_codec.h"
#include "server/call_task.h"
#include "server/error_reply.h"
#include "server/server_call.h"
#include "server/server_connection.h"

namespace arenarpc::server {

BaiduStdServerProtocol::BaiduStdServerProtocol(const ServerState& state)
    : max_body_size_(state.options.max_body_size), decoder_(state.options.max_body_size) {}

std::unique_ptr<ServerProtocol> BaiduStdServerProtocol::Create(ServerState& state,
                                                               ServerConnection& /*owner*/,
                                                               bool /*internal_port*/) {
  return std::make_unique<BaiduStdServerProtocol>(state);
}

ServerProtocol::Step BaiduStdServerProtocol::Next(ServerConnection& server,
                                                  net::Connection& connection,
                                                  net::BufferChain& input,
                                                  std::chrono::steady_clock::time_point read_at,
                                                  std::unique_ptr<PendingCall>* pending) {
  protocol::Frame frame;
  const protocol::DecodeStatus status = decoder_.Next(input, &frame);
  if (status == protocol::DecodeStatus::kNeedMore) return Step::kNeedMore;
  if (status == protocol::DecodeStatus::kError) return Step::kMalformed;

  const protocol::RpcMeta& meta = frame.meta;
  const protocol::RpcRequestMeta& request_meta = meta.request();  // absent: empty names
  ServerConnection::CallHead head;
  head.service_name = request_meta.service_name();
  head.method_name = request_meta.method_name();
  head.key = meta.correlation_id();
  head.credential = meta.authentication_data();
  const size_t request_size = frame.payload.size() + frame.attachment.size();
  std::string invalid_text;
  if (decoder_.attachment_error()) {
    invalid_text =
        protocol::AttachmentTooLargeText("request", meta.attachment_size(), request_size);
    head.invalid_code = EREQUEST;
    head.invalid_text = invalid_text;
  }
  std::unique_ptr<ServerCall> call = server.Admit(connection, head, read_at);
  if (!call) return Step::kAnswered;

  Controller& controller = call->controller();
  controller.set_log_id(request_meta.log_id());
  if (request_meta.has_request_id()) controller.set_request_id(request_meta.request_id());
  controller.set_trace(request_meta.trace_id(), request_meta.span_id(),
                       request_meta.parent_span_id());
  if (request_meta.has_timeout_ms()) {
    internal::ControllerAccess::set_deadline_hint_ms(controller, request_meta.timeout_ms());
  }
  controller.set_request_compress_type(static_cast<CompressType>(meta.compress_type()));
  for (const auto& [key, value] : meta.user_fields()) {
    controller.request_user_fields().emplace(key, value);
  }
  controller.request_attachment() = std::move(frame.attachment);
  *pending =
      server.Pending(std::move(call),
                     RequestPayload{std::move(frame.meta), std::move(frame.payload), request_size});
  return Step::kCall;
}

bool BaiduStdServerProtocol::OpenRequest(ServerCall& call, const RequestPayload& payload,
                                         protocol::PayloadBytes* bytes, std::string* error_text) {
  std::string detail;
  if (protocol::OpenPayload(payload.meta, payload.bytes, call.controller().request_attachment(),
                            bytes, &detail, max_body_size_)) {
    return true;
  }
  *error_text = ParseFailureText(call, payload);  // brpc answers both alike
  return false;
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
      protocol::EncodeFrame(meta, std::move(payload), std::move(controller.response_attachment()),
                            frame);
      return true;
    }
    // A reply that cannot be serialized becomes an ERESPONSE failure (spec §5.4).
    code = ERESPONSE;
    error_text = protocol::FormatErrorText(protocol::ServerIdentity(call.connection().local_side()),
                                           code, error);
  }
  protocol::RpcMeta meta;
  protocol::BuildErrorResponseMeta(call.correlation_id(), protocol::WireErrorCode(code), error_text,
                                   &controller.response_user_fields(), &meta);
  protocol::EncodeFrame(meta, net::BufferChain(), net::BufferChain(), frame);
  return false;
}

void BaiduStdServerProtocol::SendReply(net::Connection& connection, int64_t /*key*/,
                                       net::BufferChain&& reply) {
  connection.Write(std::move(reply));
}

void BaiduStdServerProtocol::SendError(net::Connection& connection, int64_t key, int code,
                                       std::string_view text) {
  WriteErrorReply(connection, key, code, text);
}

}  // namespace arenarpc::server
