#include "protocol/meta_builder.h"

#include <stdexcept>

#include "arenarpc/error_codes.h"
#include "protocol/checksum.h"
#include "protocol/frame_codec.h"

namespace arenarpc::protocol {
namespace {

void SetUserFields(const std::map<std::string, std::string>* fields, RpcMeta* meta) {
  if (fields == nullptr || fields->empty()) return;
  auto& out = *meta->mutable_user_fields();
  for (const auto& [key, value] : *fields) out[key] = value;
}

bool SetPayloadFields(const PayloadFields& fields, const net::BufferChain& payload,
                      const net::BufferChain& attachment, RpcMeta* meta, std::string* error) {
  meta->set_compress_type(fields.compress_type);
  if (fields.attachment_size != attachment.size()) {
    *error = "attachment_size=" + std::to_string(fields.attachment_size) +
             " but the attachment has " + std::to_string(attachment.size()) + " bytes";
    return false;
  }
  if (fields.attachment_size > 0) {
    if (fields.attachment_size > static_cast<size_t>(INT32_MAX)) {
      *error = "attachment of " + std::to_string(fields.attachment_size) + " bytes is too large";
      return false;
    }
    meta->set_attachment_size(static_cast<int32_t>(fields.attachment_size));
  }
  meta->set_content_type(CONTENT_TYPE_PB);
  return SetChecksum(fields.checksum_type, fields.checksum_with_attachment, payload, attachment,
                     meta, error);
}

}  // namespace

bool BuildRequestMeta(const RequestMetaFields& call, const PayloadFields& payload_fields,
                      const net::BufferChain& payload, const net::BufferChain& attachment,
                      RpcMeta* meta, std::string* error) {
  meta->Clear();
  RpcRequestMeta* request = meta->mutable_request();
  request->set_service_name(call.service_name.data(), call.service_name.size());
  request->set_method_name(call.method_name.data(), call.method_name.size());
  if (call.log_id != 0) request->set_log_id(call.log_id);
  if (call.trace_id != 0) {
    request->set_trace_id(call.trace_id);
    request->set_span_id(call.span_id);
    request->set_parent_span_id(call.parent_span_id);
  }
  if (!call.request_id.empty()) {
    request->set_request_id(call.request_id.data(), call.request_id.size());
  }
  if (call.timeout_ms > 0) request->set_timeout_ms(call.timeout_ms);
  meta->set_correlation_id(call.correlation_id);
  if (call.authentication_data) {
    meta->set_authentication_data(call.authentication_data->data(),
                                  call.authentication_data->size());
  }
  SetUserFields(call.user_fields, meta);
  return SetPayloadFields(payload_fields, payload, attachment, meta, error);
}

bool BuildResponseMeta(int64_t correlation_id, const PayloadFields& payload_fields,
                       const net::BufferChain& payload, const net::BufferChain& attachment,
                       const std::map<std::string, std::string>* user_fields, RpcMeta* meta,
                       std::string* error) {
  meta->Clear();
  meta->mutable_response()->set_error_code(0);
  meta->set_correlation_id(correlation_id);
  SetUserFields(user_fields, meta);
  return SetPayloadFields(payload_fields, payload, attachment, meta, error);
}

void BuildErrorResponseMeta(int64_t correlation_id, int error_code, std::string_view error_text,
                            const std::map<std::string, std::string>* user_fields, RpcMeta* meta) {
  meta->Clear();
  RpcResponseMeta* response = meta->mutable_response();
  response->set_error_code(error_code);
  if (!error_text.empty()) response->set_error_text(error_text.data(), error_text.size());
  meta->set_compress_type(0);
  meta->set_correlation_id(correlation_id);
  SetUserFields(user_fields, meta);
  meta->set_content_type(CONTENT_TYPE_PB);
  meta->set_checksum_type(CHECKSUM_TYPE_NONE);
  meta->set_checksum_value("");
}

void EncodeErrorResponse(int64_t correlation_id, int error_code, std::string_view error_text,
                         net::BufferChain* out) {
  RpcMeta meta;
  BuildErrorResponseMeta(correlation_id, error_code, error_text, nullptr, &meta);
  EncodeFrame(meta, net::BufferChain(), net::BufferChain(), out);
}

int WireErrorCode(int handler_code) noexcept {
  return handler_code == -1 ? EINTERNAL : handler_code;
}

std::string ServerIdentity(std::string_view ip_port) {
  std::string s = "[";
  s.append(ip_port).append("]");
  return s;
}

std::string FormatErrorText(std::string_view identity, int handler_code, std::string_view message) {
  std::string s(identity);
  if (handler_code != -1) s.append("[E").append(std::to_string(handler_code)).append("]");
  s.append(message);
  return s;
}

std::string NoServiceText(std::string_view service_name) {
  return "Fail to find service=" + std::string(service_name);
}

std::string NoMethodText(std::string_view service_name, std::string_view method_name) {
  std::string s = "Fail to find method=";
  s.append(service_name).append("/").append(method_name);
  return s;
}

std::string AttachmentTooLargeText(std::string_view what, int64_t attachment_size, size_t size) {
  std::string s = "attachment_size=" + std::to_string(attachment_size) + " is larger than ";
  s.append(what).append("_size=").append(std::to_string(size));
  return s;
}

std::string MaxConcurrencyText(int64_t max_concurrency) {
  return "Reached server's max_concurrency=" + std::to_string(max_concurrency);
}

}  // namespace arenarpc::protocol
