#include "server/capture_seam.h"

#include "protocol/h2/grpc_wire.h"
#include "server/method_entry.h"

namespace arenarpc::server {
namespace {

// brpc's ProtocolType values (RpcDumpMeta.protocol_type).
constexpr int kBrpcProtocolBaiduStd = 1;
constexpr int kBrpcProtocolHttp = 6;
// A baidu_std request at least this large is queued as the blocks it arrived in; a smaller one is
// copied (a copy then costs less than what a shared page would pin in the queue's bound).
constexpr size_t kShareRequestsFrom = 16u << 10;

void AppendChain(const net::BufferChain& chain, std::string* out) {
  for (size_t i = 0; i < chain.span_count(); ++i) {
    const std::span<const char> span = chain.span(i);
    out->append(span.data(), span.size());
  }
}

void SetNames(const MethodEntry& method, capture::RpcDumpMeta* meta) {
  const google::protobuf::MethodDescriptor* descriptor = method.descriptor;
  if (descriptor != nullptr) {
    meta->set_service_name(descriptor->service()->full_name());
    meta->set_method_name(descriptor->name());
    return;
  }
  const size_t dot = method.full_name.rfind('.');
  meta->set_service_name(method.full_name.substr(0, dot == std::string::npos ? 0 : dot));
  meta->set_method_name(dot == std::string::npos ? method.full_name
                                                 : method.full_name.substr(dot + 1));
}

}  // namespace

std::unique_ptr<CaptureRecord> CaptureBaiduStdRecord(const capture::RequestCapture& capture,
                                                     const protocol::RpcMeta& rpc_meta,
                                                     const net::BufferChain& payload,
                                                     const net::BufferChain& attachment) {
  auto record = std::make_unique<CaptureRecord>();
  capture::RpcDumpMeta& meta = record->meta;
  meta.set_service_name(rpc_meta.request().service_name());
  meta.set_method_name(rpc_meta.request().method_name());
  if (rpc_meta.compress_type() != 0) meta.set_compress_type(rpc_meta.compress_type());
  meta.set_protocol_type(kBrpcProtocolBaiduStd);
  if (!attachment.empty()) meta.set_attachment_size(static_cast<int64_t>(attachment.size()));
  if (capture.include_credentials() && rpc_meta.has_authentication_data()) {
    meta.set_authentication_data(rpc_meta.authentication_data());
  }
  meta.set_protocol(capture::CAPTURED_BAIDU_STD);
  if (payload.size() + attachment.size() >= kShareRequestsFrom) {
    // Shared, not copied: a large allocation on the I/O thread cost more than the rest of the
    // capture (callgrind, echo at payload_scale 10: ~1.9 M instructions a sampled call in
    // glibc's malloc, 11 % of the call); the writer thread copies it into its own buffer.
    record->shared_request.AppendShared(payload);
    record->shared_request.AppendShared(attachment);
    return record;
  }
  std::string& request = record->request;
  request.reserve(payload.size() + attachment.size());
  AppendChain(payload, &request);
  AppendChain(attachment, &request);
  return record;
}

std::unique_ptr<CaptureRecord> CaptureHttpRecord(const capture::RequestCapture& capture,
                                                 const protocol::HttpRequest& http) {
  // The request as brpc records it (protocol_type http, the raw request in `request`), written
  // back as HTTP/1.1 keep-alive with the de-chunked body and its Content-Length: what a replay
  // sends as it is.
  auto record = std::make_unique<CaptureRecord>();
  record->names_from_method = true;
  capture::RpcDumpMeta& meta = record->meta;
  meta.set_protocol_type(kBrpcProtocolHttp);
  meta.set_attachment_size(static_cast<int64_t>(http.body.size()));
  meta.set_protocol(capture::CAPTURED_HTTP);
  meta.set_http_method(http.method);
  meta.set_path(http.target);
  std::string& request = record->request;
  request = http.method + " " + http.target + " HTTP/1.1\r\n";
  for (const auto& [name, value] : http.headers) {
    if (name == "content-length" || name == "transfer-encoding" || name == "connection" ||
        name == "keep-alive") {
      continue;  // framing: rewritten below
    }
    if (name == "authorization" && !capture.include_credentials()) continue;
    capture::CapturedHeader* header = meta.add_headers();
    header->set_name(name);
    header->set_value(value);
    request.append(name).append(": ").append(value).append("\r\n");
  }
  request.append("content-length: ").append(std::to_string(http.body.size())).append("\r\n\r\n");
  request.append(http.body);
  return record;
}

std::unique_ptr<CaptureRecord> CaptureGrpcRecord(const capture::RequestCapture& capture,
                                                 const protocol::h2::GrpcRequest& grpc,
                                                 int compress_type) {
  auto record = std::make_unique<CaptureRecord>();
  record->names_from_method = true;
  capture::RpcDumpMeta& meta = record->meta;
  if (compress_type != 0) meta.set_compress_type(compress_type);
  meta.set_protocol(capture::CAPTURED_GRPC);
  meta.set_path(grpc.path);
  if (!grpc.encoding.empty()) {
    capture::CapturedHeader* header = meta.add_headers();
    header->set_name("grpc-encoding");
    header->set_value(grpc.encoding);
  }
  for (const auto& [name, value] : grpc.metadata) {
    if (name == protocol::h2::kAuthorizationMetadata && !capture.include_credentials()) continue;
    capture::CapturedHeader* header = meta.add_headers();
    header->set_name(name);
    header->set_value(value);
  }
  std::string& request = record->request;
  request.reserve(grpc.message.size());
  AppendChain(grpc.message, &request);
  return record;
}

void SubmitCapture(capture::RequestCapture& capture, CaptureRecord&& record,
                   const MethodEntry& method) {
  if (record.names_from_method) SetNames(method, &record.meta);
  if (!record.shared_request.empty()) {
    capture.Submit(std::move(record.meta), std::move(record.shared_request));
  } else {
    capture.Submit(std::move(record.meta), std::move(record.request));
  }
}

}  // namespace arenarpc::server
