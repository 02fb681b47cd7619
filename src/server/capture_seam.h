#pragma once
// The server's one seam into capture (ServerOptions::capture, docs/capture.md): each protocol's
// Next() asks its function here whether to sample the call it decoded, and gets the record of a
// sampled one to carry in the DecodedCall; admission submits it once the call is admitted (a
// rejected call's record is dropped with it). Off (no RequestCapture) it costs a null check; on,
// a sample-budget check, and only a sampled call copies its request bytes into a record for the
// writer thread.

#include <memory>
#include <string_view>

#include "arenarpc/buffer_chain.h"
#include "capture/request_capture.h"
#include "protocol/h2/grpc_server_session.h"
#include "protocol/http/http_request.h"
#include "protocol/rpc_meta.pb.h"
#include "server/decoded_call.h"

namespace arenarpc::server {

struct MethodEntry;

std::unique_ptr<CaptureRecord> CaptureBaiduStdRecord(const capture::RequestCapture& capture,
                                                     const protocol::RpcMeta& meta,
                                                     const net::BufferChain& payload,
                                                     const net::BufferChain& attachment);
std::unique_ptr<CaptureRecord> CaptureHttpRecord(const capture::RequestCapture& capture,
                                                 const protocol::HttpRequest& request);
std::unique_ptr<CaptureRecord> CaptureGrpcRecord(const capture::RequestCapture& capture,
                                                 const protocol::h2::GrpcRequest& request,
                                                 int compress_type);

// The record of a decoded request when capture samples it, else null.
inline std::unique_ptr<CaptureRecord> CaptureBaiduStd(capture::RequestCapture* capture,
                                                      const protocol::RpcMeta& meta,
                                                      const net::BufferChain& payload,
                                                      const net::BufferChain& attachment) {
  if (capture == nullptr || !capture->Sample()) return nullptr;
  return CaptureBaiduStdRecord(*capture, meta, payload, attachment);
}
inline std::unique_ptr<CaptureRecord> CaptureHttp(capture::RequestCapture* capture,
                                                  const protocol::HttpRequest& request) {
  if (capture == nullptr || !capture->Sample()) return nullptr;
  return CaptureHttpRecord(*capture, request);
}
// Unary calls only: a streaming call's messages come later, through its stream.
inline std::unique_ptr<CaptureRecord> CaptureGrpc(capture::RequestCapture* capture,
                                                  const protocol::h2::GrpcRequest& request,
                                                  int compress_type) {
  if (capture == nullptr || request.streaming || !capture->Sample()) return nullptr;
  return CaptureGrpcRecord(*capture, request, compress_type);
}

// The record of an admitted call, to the writer (named after `method` where the record says so).
void SubmitCapture(capture::RequestCapture& capture, CaptureRecord&& record,
                   const MethodEntry& method);

}  // namespace arenarpc::server
