#pragma once
// The server's one seam into capture (ServerOptions::capture, docs/capture.md): each protocol's
// Admitted() hands the request it decoded to its function here, before the request's parts move
// into the call. Off (no RequestCapture) it costs a null check; on, a sample-budget check, and
// only a sampled call copies its request bytes into a record for the writer thread.

#include <string_view>

#include "arenarpc/buffer_chain.h"
#include "capture/request_capture.h"
#include "protocol/h2/grpc_server_session.h"
#include "protocol/http/http_request.h"
#include "protocol/rpc_meta.pb.h"

namespace arenarpc::server {

struct MethodEntry;

void CaptureBaiduStdRecord(capture::RequestCapture& capture, const protocol::RpcMeta& meta,
                           const net::BufferChain& payload, const net::BufferChain& attachment);
void CaptureHttpRecord(capture::RequestCapture& capture, const protocol::HttpRequest& request,
                       const MethodEntry& method);
void CaptureGrpcRecord(capture::RequestCapture& capture, const protocol::h2::GrpcRequest& request,
                       int compress_type, const MethodEntry& method);

inline void CaptureBaiduStd(capture::RequestCapture* capture, const protocol::RpcMeta& meta,
                            const net::BufferChain& payload, const net::BufferChain& attachment) {
  if (capture != nullptr && capture->Sample()) {
    CaptureBaiduStdRecord(*capture, meta, payload, attachment);
  }
}
inline void CaptureHttp(capture::RequestCapture* capture, const protocol::HttpRequest& request,
                        const MethodEntry& method) {
  if (capture != nullptr && capture->Sample()) CaptureHttpRecord(*capture, request, method);
}
// Unary calls only: a streaming call's messages come later, through its stream.
inline void CaptureGrpc(capture::RequestCapture* capture, const protocol::h2::GrpcRequest& request,
                        int compress_type, const MethodEntry& method) {
  if (capture != nullptr && !request.streaming && capture->Sample()) {
    CaptureGrpcRecord(*capture, request, compress_type, method);
  }
}

}  // namespace arenarpc::server
