#pragma once
// Controller: per-call state shared by caller and handler, brpc-style.
// Client: set timeout/log_id/attachment/compression before the call, read Failed()/ErrorCode()/
// latency/response attachment after; call_id() + Join()/StartCancel() wait for or cancel an
// asynchronous call. Server: the handler reads log_id/request_id/trace ids/attachment/user fields,
// calls SetFailed() or sets the response attachment/compression, and may watch for cancellation
// (IsCanceled()/NotifyOnCancel(): the client disconnected or the request's deadline passed).

#include <google/protobuf/service.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "arenarpc/authenticator.h"  // AuthContext (Controller::auth_context())
#include "arenarpc/buffer_chain.h"
#include "arenarpc/callback.h"       // NewCallback (brpc's controller.h brings it too)
#include "arenarpc/closure_guard.h"
#include "arenarpc/error_codes.h"
#include "arenarpc/trace_context.h"

namespace arenarpc {

namespace internal {
struct ControllerAccess;  // the runtime's setters (src/call/controller_access.h)
class CancelSource;
struct CallStreams;  // streams offered / accepted with the call (src/stream/call_streams.h)
class SpanRecord;   // a sampled call's rpcz span (src/call/span_record.h)
}  // namespace internal

enum class CompressType : int { kNone = 0, kSnappy = 1, kGzip = 2, kZlib = 3 };
// brpc's names for the same values (brpc's LZ4 has no counterpart).
inline constexpr CompressType COMPRESS_TYPE_NONE = CompressType::kNone;
inline constexpr CompressType COMPRESS_TYPE_SNAPPY = CompressType::kSnappy;
inline constexpr CompressType COMPRESS_TYPE_GZIP = CompressType::kGzip;
inline constexpr CompressType COMPRESS_TYPE_ZLIB = CompressType::kZlib;

// Identifies one client call (brpc's CallId): see Controller::call_id(), Join(), StartCancel().
struct CallId {
  uint64_t value = 0;
};

// What TLS established about the client of a server call (Controller::tls_peer(), docs/tls.md).
struct TlsPeer {
  std::string version;            // "TLSv1.3", "TLSv1.2"
  std::string cipher;             // e.g. "TLS_AES_128_GCM_SHA256"
  std::string alpn;               // the protocol ALPN agreed on; empty if none
  bool has_certificate = false;   // the client presented a certificate (mTLS)
  bool verified = false;          // ... and it verified against ServerTlsOptions::client_ca_file
  std::string subject;            // RFC 2253, e.g. "CN=client-a,O=Example"
  std::string common_name;        // the subject's CN
  std::vector<std::string> sans;  // subjectAltName entries: "DNS:x", "IP:1.2.3.4", "URI:x", "email:x"
};

class Controller : public google::protobuf::RpcController {
 public:
  Controller();
  ~Controller() override;

  // --- google::protobuf::RpcController
  // Reset() makes the controller reusable for another client call (it gets a new call_id()).
  void Reset() override;
  bool Failed() const override { return error_code_ != 0; }
  std::string ErrorText() const override { return error_text_; }
  // Client: same as arenarpc::StartCancel(call_id()) (the controller must still be alive).
  void StartCancel() override;
  void SetFailed(const std::string& reason) override;  // code -1 -> EINTERNAL (2001) on the wire
  // Server: true once the client closed the connection or the deadline it sent (request meta
  // timeout_ms) passed. Always false on a client controller.
  bool IsCanceled() const override;
  // Server: runs `callback` exactly once — when the call is canceled, at once if it already was,
  // or when done->Run() finishes if it never was. Thread-safe. Client: runs it at once.
  void NotifyOnCancel(google::protobuf::Closure* callback) override;

  // --- errors
  void SetFailed(int error_code, std::string reason);
  // brpc's printf-style form. A format without arguments is still a format ("%%" for '%').
  void SetFailed(int error_code, const char* reason_fmt, ...) __attribute__((format(printf, 3, 4)));
  int ErrorCode() const noexcept { return error_code_; }

  // --- both sides
  int64_t log_id() const noexcept { return log_id_; }
  void set_log_id(int64_t id) noexcept { log_id_ = id; }
  const std::string& request_id() const noexcept { return request_id_; }
  void set_request_id(std::string id) { request_id_ = std::move(id); }
  // The call's trace context (trace_context.h). Server: what the client sent (baidu_std's
  // RpcMeta fields, W3C traceparent/tracestate on HTTP and gRPC). Client: set it to send one; left
  // unset, a call made while a handler runs takes a child of the handler's (CurrentTrace()).
  const TraceContext& trace() const noexcept { return trace_ ? *trace_ : NoTrace(); }
  void set_trace(TraceContext trace);
  // brpc's 64-bit view of the same: trace_id is the low half of a W3C trace-id.
  int64_t trace_id() const noexcept { return static_cast<int64_t>(trace().trace_id); }
  int64_t span_id() const noexcept { return static_cast<int64_t>(trace().span_id); }
  int64_t parent_span_id() const noexcept { return static_cast<int64_t>(trace().parent_span_id); }
  void set_trace(int64_t trace_id, int64_t span_id, int64_t parent_span_id);
  net::BufferChain& request_attachment() noexcept { return request_attachment_; }
  net::BufferChain& response_attachment() noexcept { return response_attachment_; }
  // user_fields (RpcMeta 9): request pairs reach the handler; pairs it sets return in the reply.
  std::map<std::string, std::string>& request_user_fields() { return request_user_fields_; }
  std::map<std::string, std::string>& response_user_fields() { return response_user_fields_; }
  // gRPC server: a failed call's rich status (a serialized google.rpc.Status) that goes, base64,
  // in the grpc-status-details-bin trailer next to grpc-status and grpc-message (docs/grpc.md);
  // ignored when the call succeeds and by the other protocols. gRPC client (a Channel or
  // GrpcClientStream with protocol "grpc"): the one a failed call received, decoded; empty when
  // the server sent none or the call succeeded.
  const std::string& grpc_status_details() const noexcept { return grpc_status_details_; }
  void set_grpc_status_details(std::string details) { grpc_status_details_ = std::move(details); }
  CompressType request_compress_type() const noexcept { return request_compress_; }
  void set_request_compress_type(CompressType t) noexcept { request_compress_ = t; }
  CompressType response_compress_type() const noexcept { return response_compress_; }
  void set_response_compress_type(CompressType t) noexcept { response_compress_ = t; }
  // "ip:port" of the other side (client: set when the call completed).
  const std::string& remote_side() const noexcept {
    return remote_side_of_ != nullptr ? *remote_side_of_ : remote_side_;
  }
  // "ip:port" of this side (server: the accepting socket's address; empty on the client).
  const std::string& local_side() const noexcept;
  // Server: the client's TLS identity; nullptr on a clear-text connection (and on the client).
  const TlsPeer* tls_peer() const noexcept { return tls_peer_; }
  // Server: what ServerOptions::auth's VerifyCredential() filled in; nullptr without an
  // authenticator (and on the client).
  const AuthContext* auth_context() const noexcept { return auth_context_; }

  // --- client side
  // Per-call overrides of ChannelOptions (-1 = use the channel's).
  void set_timeout_ms(int64_t ms) noexcept { timeout_ms_ = ms; }
  int64_t timeout_ms() const noexcept { return timeout_ms_; }
  void set_max_retry(int n) noexcept { max_retry_ = n; }
  int max_retry() const noexcept { return max_retry_; }
  // c_murmurhash: the point on the hash ring this call goes to (low 32 bits), e.g.
  // MurmurHash32(key) from arenarpc/cluster/hash.h; calls with the same code reach the same server.
  void set_request_code(uint64_t code) noexcept { request_code_ = code, has_request_code_ = true; }
  bool has_request_code() const noexcept { return has_request_code_; }
  uint64_t request_code() const noexcept { return request_code_; }
  int64_t latency_us() const noexcept { return latency_us_; }
  int retried_count() const noexcept { return retried_count_; }
  // The id of the call this controller is (or will be) used for; valid before the call starts,
  // stable until Reset(). Copy it before an asynchronous call whose done may delete the controller.
  CallId call_id();
  // Fan-out calls (ParallelChannel, PartitionChannel), once the call completed: sub_count() is
  // the number of sub-channels, sub(i) the controller of the sub-call sent to sub-channel i
  // (its error, latency, remote side, attachments), nullptr if its CallMapper skipped it or i is
  // out of range. Valid until Reset() or destruction (brpc's Controller::sub).
  int sub_count() const noexcept { return static_cast<int>(sub_controllers_.size()); }
  const Controller* sub(int index) const noexcept {
    return index >= 0 && index < sub_count() ? sub_controllers_[index] : nullptr;
  }

  // --- server side
  // The caller's remaining budget if it sent one (RpcRequestMeta.timeout_ms), else -1.
  int32_t deadline_hint_ms() const noexcept { return deadline_hint_ms_; }
  // Two-phase completion: the returned handle keeps the call's request and response alive after
  // done->Run() has sent the response; they go back to their memory strategy when done->Run() has
  // run and every handle is gone. Only valid inside a server handler (else returns nullptr).
  std::shared_ptr<void> RetainMessages() const {
    return retain_hook_ ? retain_hook_(*this) : nullptr;
  }

 private:
  friend struct internal::ControllerAccess;
  using RetainHook = std::shared_ptr<void> (*)(const Controller&);

  // The 4-byte and 1-byte fields side by side: a server call embeds its Controller in one
  // allocation that must stay in glibc's small sizes (server/server_call.cc).
  int error_code_ = 0;
  CompressType request_compress_ = CompressType::kNone, response_compress_ = CompressType::kNone;
  int max_retry_ = -1;
  int retried_count_ = 0;
  int32_t deadline_hint_ms_ = -1;
  bool has_request_code_ = false;
  std::string error_text_;
  int64_t log_id_ = 0;
  std::string request_id_;
  // Allocated only for a call that carries a trace: a server call is one allocation that must
  // stay in malloc's small sizes (its per-thread cache), and most calls carry none.
  std::unique_ptr<TraceContext> trace_;
  static const TraceContext& NoTrace() noexcept;
  net::BufferChain request_attachment_, response_attachment_;
  std::map<std::string, std::string> request_user_fields_, response_user_fields_;
  std::string grpc_status_details_;
  std::string remote_side_;                     // a client call's
  const std::string* remote_side_of_ = nullptr;  // a server call's: its connection's
  const std::string* local_side_ = nullptr;  // the server connection's (outlives the call)
  const TlsPeer* tls_peer_ = nullptr;        // the server connection's (outlives the call)
  const AuthContext* auth_context_ = nullptr;  // the server connection's or call's
  int64_t timeout_ms_ = -1;
  uint64_t request_code_ = 0;
  int64_t latency_us_ = 0;
  std::atomic<uint64_t> call_id_{0};  // 0 = not assigned yet
  RetainHook retain_hook_ = nullptr;
  void* retain_state_ = nullptr;
  internal::CancelSource* cancel_source_ = nullptr;  // server calls only
  std::shared_ptr<internal::CallStreams> streams_;   // arenarpc/stream.h; null: none
  std::shared_ptr<internal::SpanRecord> span_;       // arenarpc/rpcz.h; null: not sampled
  std::vector<const Controller*> sub_controllers_;    // fan-out calls: see sub()
  std::shared_ptr<void> sub_calls_;                   // owns what sub_controllers_ point to
};

// Client: waits (a fiber suspends, a thread blocks) until the call `id` has completed and its done (if any) has returned. Returns at
// once for a call that already completed, or whose CallMethod has not been entered yet.
void Join(CallId id);
// Client: fails the call `id` with ECANCELED (its done runs once, as for any other failure);
// a no-op if it already completed. Any thread; the reply, if it still arrives, is dropped.
void StartCancel(CallId id);

}  // namespace arenarpc
