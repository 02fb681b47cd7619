#include "server/server_connection.h"

#include <asio/post.hpp>

#include "arenarpc/error_codes.h"
#include "protocol/meta_builder.h"
#include "server/call_task.h"
#include "server/error_reply.h"
#include "server/server_call.h"

namespace arenarpc::server {

ServerConnection::ServerConnection(ServerState* state)
    : state_(state), decoder_(state->options.max_body_size) {}

net::Connection::InputResult ServerConnection::OnInput(
    net::Connection& connection, net::BufferChain& input,
    net::Connection::Clock::time_point read_at) {
  net::Connection::InputResult result;
  std::unique_ptr<CallTask> last;  // runs here, unless another request follows it
  while (!connection.closed()) {
    protocol::Frame frame;
    const protocol::DecodeStatus status = decoder_.Next(input, &frame);
    if (status == protocol::DecodeStatus::kNeedMore) break;
    if (status == protocol::DecodeStatus::kError) {
      state_->counters.malformed_frames.fetch_add(1, std::memory_order_relaxed);
      state_->malformed_log.Log("closing connection from " + connection.remote_side() +
                                ": malformed frame: " + decoder_.error());
      result.keep_open = false;
      break;
    }
    std::unique_ptr<CallTask> task = Admit(connection, std::move(frame), read_at);
    if (!task) continue;
    if (last) Queue(connection, std::move(last));
    last = std::move(task);
  }
  if (last) {
    if (state_->workers) {
      Queue(connection, std::move(last));
    } else {
      result.run_next = std::move(last);
    }
  }
  UpdateReadBlock(connection);
  return result;
}

void ServerConnection::Queue(net::Connection& connection, std::unique_ptr<CallTask> task) {
  task->set_queued();
  state_->queued.fetch_add(1, std::memory_order_relaxed);
  auto run = [task = std::move(task)]() mutable { task->Run(); };
  if (state_->workers) {
    asio::post(*state_->workers, std::move(run));
  } else {
    asio::post(connection.executor(), std::move(run));
  }
}

void ServerConnection::OnCallStarted(net::Connection& connection, size_t request_bytes) {
  queued_request_bytes_.fetch_sub(request_bytes, std::memory_order_relaxed);
  UpdateReadBlock(connection);
}

void ServerConnection::UpdateReadBlock(net::Connection& connection) {
  const size_t limit = state_->options.max_queued_request_bytes;
  // Pause above the limit, resume at half of it.
  auto wanted = [&](bool blocked) {
    const size_t bytes = queued_request_bytes_.load(std::memory_order_relaxed);
    return blocked ? bytes > limit / 2 : bytes > limit;
  };
  const bool blocked = blocked_.load(std::memory_order_acquire);
  if (wanted(blocked) == blocked) return;
  std::lock_guard lock(block_mutex_);
  const bool now_blocked = blocked_.load(std::memory_order_relaxed);
  if (wanted(now_blocked) == now_blocked) return;
  blocked_.store(!now_blocked, std::memory_order_release);
  connection.SetDelegateBlocked(!now_blocked);
}

void ServerConnection::OnClosed(net::Connection& connection) {
  switch (connection.close_reason()) {
    case net::CloseReason::kIdleTimeout:
      state_->counters.connections_closed_idle.fetch_add(1, std::memory_order_relaxed);
      break;
    case net::CloseReason::kReadTimeout:
      state_->counters.connections_closed_read_timeout.fetch_add(1, std::memory_order_relaxed);
      state_->timeout_log.Log("closing connection from " + connection.remote_side() +
                              ": a frame did not complete within read_timeout_ms=" +
                              std::to_string(state_->options.read_timeout_ms));
      break;
    default:
      break;
  }
  std::lock_guard lock(state_->connections_mutex);
  state_->connections.erase(connection.id());
  if (state_->connections.empty()) state_->connections_gone.notify_all();
}

std::unique_ptr<CallTask> ServerConnection::Admit(net::Connection& connection,
                                                  protocol::Frame&& frame,
                                                  net::Connection::Clock::time_point read_at) {
  ServerState& state = *state_;
  state.counters.requests.fetch_add(1, std::memory_order_relaxed);
  const protocol::RpcMeta& meta = frame.meta;
  const int64_t correlation_id = meta.correlation_id();

  if (state.stopping.load(std::memory_order_acquire)) {
    state.counters.rejected_stopping.fetch_add(1, std::memory_order_relaxed);
    WriteErrorReply(connection, correlation_id, ELOGOFF, protocol::kServerStoppingText);
    return nullptr;
  }
  const int max_queued = state.options.max_queued_requests;
  if (max_queued > 0 && state.queued.load(std::memory_order_relaxed) >= max_queued) {
    state.counters.rejected_limit.fetch_add(1, std::memory_order_relaxed);
    WriteErrorReply(connection, correlation_id, ELIMIT,
                    "Reached server's max_queued_requests=" + std::to_string(max_queued));
    return nullptr;
  }
  if (!state.TryAdmit()) {
    state.counters.rejected_limit.fetch_add(1, std::memory_order_relaxed);
    WriteErrorReply(connection, correlation_id, ELIMIT,
                    protocol::MaxConcurrencyText(state.concurrency_limit()));
    return nullptr;
  }
  // Admitted: from here every path ends in exactly one FinishOne().
  const size_t request_size = frame.payload.size() + frame.attachment.size();
  if (decoder_.attachment_error()) {
    WriteErrorReply(connection, correlation_id, EREQUEST,
                    protocol::AttachmentTooLargeText("request", meta.attachment_size(),
                                                     request_size));
    state.FinishOne();
    return nullptr;
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
    return nullptr;
  }
  if (connection.unwritten_held_bytes() >= state.options.max_unwritten_bytes) {
    state.counters.rejected_overcrowded.fetch_add(1, std::memory_order_relaxed);
    method->rejected.fetch_add(1, std::memory_order_relaxed);
    WriteErrorReply(connection, correlation_id, EOVERCROWDED,
                    "Connection to " + connection.remote_side() + " is overcrowded");
    state.FinishOne();
    return nullptr;
  }

  auto call = std::make_unique<ServerCall>(state.shared_from_this(), connection.shared_from_this(),
                                           method, correlation_id, read_at);
  Controller& controller = call->controller();
  controller.set_log_id(request_meta.log_id());
  if (request_meta.has_request_id()) controller.set_request_id(request_meta.request_id());
  controller.set_trace(request_meta.trace_id(), request_meta.span_id(),
                       request_meta.parent_span_id());
  if (request_meta.has_timeout_ms()) controller.set_deadline_hint_ms(request_meta.timeout_ms());
  controller.set_remote_side(connection.remote_side());
  controller.set_request_compress_type(static_cast<CompressType>(meta.compress_type()));
  for (const auto& [key, value] : meta.user_fields()) {
    controller.request_user_fields().emplace(key, value);
  }
  controller.request_attachment() = std::move(frame.attachment);
  queued_request_bytes_.fetch_add(request_size, std::memory_order_relaxed);
  return std::make_unique<CallTask>(
      std::move(call), RequestPayload{std::move(frame.meta), std::move(frame.payload), request_size});
}

}  // namespace arenarpc::server
