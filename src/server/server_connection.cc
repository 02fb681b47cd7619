#include "server/server_connection.h"

#include <asio/post.hpp>

#include <chrono>

#include "arenarpc/error_codes.h"
#include "client/controller_access.h"
#include "protocol/meta_builder.h"
#include "server/error_reply.h"
#include "server/server_call.h"

namespace arenarpc::server {
namespace {

// brpc's -socket_max_unwritten_bytes default (spec §5.1 step 7).
constexpr size_t kMaxUnwrittenBytes = 64u << 20;

}  // namespace

ServerConnection::ServerConnection(ServerState* state)
    : state_(state), decoder_(state->options.max_body_size) {}

bool ServerConnection::OnInput(net::Connection& connection, net::BufferChain& input) {
  while (!connection.closed()) {
    protocol::Frame frame;
    switch (decoder_.Next(input, &frame)) {
      case protocol::DecodeStatus::kNeedMore:
        return true;
      case protocol::DecodeStatus::kError:
        state_->counters.malformed_frames.fetch_add(1, std::memory_order_relaxed);
        state_->malformed_log.Log("closing connection from " + connection.remote_side() +
                                  ": malformed frame: " + decoder_.error());
        return false;
      case protocol::DecodeStatus::kFrame:
        Dispatch(connection, std::move(frame));
        break;
    }
  }
  return false;
}

void ServerConnection::OnClosed(net::Connection& connection) {
  cancels_.Close();  // the client is gone: cancel its calls in flight
  if (connection.closed_by_idle_timeout()) {
    state_->counters.connections_closed_idle.fetch_add(1, std::memory_order_relaxed);
  }
  std::lock_guard lock(state_->connections_mutex);
  state_->connections.erase(connection.id());
  if (state_->connections.empty()) state_->connections_gone.notify_all();
}

void ServerConnection::Dispatch(net::Connection& connection, protocol::Frame&& frame) {
  const auto start = std::chrono::steady_clock::now();
  ServerState& state = *state_;
  state.counters.requests.fetch_add(1, std::memory_order_relaxed);
  const protocol::RpcMeta& meta = frame.meta;
  const int64_t correlation_id = meta.correlation_id();

  if (state.stopping.load(std::memory_order_acquire)) {
    state.counters.rejected_stopping.fetch_add(1, std::memory_order_relaxed);
    WriteErrorReply(connection, correlation_id, ELOGOFF, protocol::kServerStoppingText);
    return;
  }
  if (!state.TryAdmit()) {
    state.counters.rejected_limit.fetch_add(1, std::memory_order_relaxed);
    WriteErrorReply(connection, correlation_id, ELIMIT,
                    protocol::MaxConcurrencyText(state.options.max_concurrency));
    return;
  }
  // Admitted: from here every path ends in exactly one FinishOne().
  const size_t request_size = frame.payload.size() + frame.attachment.size();
  if (decoder_.attachment_error()) {
    WriteErrorReply(connection, correlation_id, EREQUEST,
                    protocol::AttachmentTooLargeText("request", meta.attachment_size(),
                                                     request_size));
    state.FinishOne();
    return;
  }
  int code = 0;
  std::string text;
  const protocol::RpcRequestMeta& request_meta = meta.request();  // absent: empty names
  MethodEntry* method = state.registry.Resolve(request_meta.service_name(),
                                               request_meta.method_name(), &code, &text);
  if (method == nullptr) {
    state.counters.rejected_unknown.fetch_add(1, std::memory_order_relaxed);
    WriteErrorReply(connection, correlation_id, code, text);
    state.FinishOne();
    return;
  }
  if (connection.unwritten_bytes() >= kMaxUnwrittenBytes) {
    state.counters.rejected_overcrowded.fetch_add(1, std::memory_order_relaxed);
    method->rejected.fetch_add(1, std::memory_order_relaxed);
    WriteErrorReply(connection, correlation_id, EOVERCROWDED,
               "Connection to " + connection.remote_side() + " is overcrowded");
    state.FinishOne();
    return;
  }

  auto call = std::make_unique<ServerCall>(state.shared_from_this(), connection.shared_from_this(),
                                           &cancels_, method, correlation_id, start);
  Controller& controller = call->controller();
  controller.set_log_id(request_meta.log_id());
  if (request_meta.has_request_id()) controller.set_request_id(request_meta.request_id());
  controller.set_trace(request_meta.trace_id(), request_meta.span_id(),
                       request_meta.parent_span_id());
  if (request_meta.has_timeout_ms()) {
    internal::ControllerAccess::set_deadline_hint_ms(controller, request_meta.timeout_ms());
  }
  internal::ControllerAccess::set_remote_side(controller, connection.remote_side());
  controller.set_request_compress_type(static_cast<CompressType>(meta.compress_type()));
  for (const auto& [key, value] : meta.user_fields()) {
    controller.request_user_fields().emplace(key, value);
  }
  controller.request_attachment() = std::move(frame.attachment);

  RequestPayload payload{std::move(frame.meta), std::move(frame.payload), request_size};
  if (state.workers) {
    asio::post(*state.workers, [call = std::move(call), payload = std::move(payload)]() mutable {
      ServerCall::Execute(std::move(call), std::move(payload));
    });
  } else {
    ServerCall::Execute(std::move(call), std::move(payload));
  }
}

}  // namespace arenarpc::server
