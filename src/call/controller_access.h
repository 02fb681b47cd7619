#pragma once
// ControllerAccess: what only the runtime sets on a Controller (latency, retries, remote side,
// the server call's hooks). Not installed: users cannot reach these setters.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "arenarpc/controller.h"
#include "call/cancel_source.h"

namespace arenarpc::internal {

struct ControllerAccess {
  using RetainHook = Controller::RetainHook;

  static void set_latency_us(Controller& c, int64_t us) noexcept { c.latency_us_ = us; }
  static void set_retried_count(Controller& c, int n) noexcept { c.retried_count_ = n; }
  static void set_remote_side(Controller& c, const std::string& side) { c.remote_side_ = side; }
  // A server call's: its connection's string, which outlives the call (no copy per call).
  static void set_remote_side_of(Controller& c, const std::string* side) noexcept {
    c.remote_side_of_ = side;
  }
  // `side` must outlive the controller (a server call's connection does).
  static void set_local_side(Controller& c, const std::string* side) noexcept {
    c.local_side_ = side;
  }
  // `peer` must outlive the controller (a server call's connection does).
  static void set_tls_peer(Controller& c, const TlsPeer* peer) noexcept { c.tls_peer_ = peer; }
  // `context` must outlive the controller (a server call's connection, or the call, owns it).
  static void set_auth_context(Controller& c, const AuthContext* context) noexcept {
    c.auth_context_ = context;
  }
  static void set_deadline_hint_ms(Controller& c, int32_t ms) noexcept { c.deadline_hint_ms_ = ms; }
  static void set_retain_hook(Controller& c, RetainHook hook, void* state) noexcept {
    c.retain_hook_ = hook, c.retain_state_ = state;
  }
  static void* retain_state(const Controller& c) noexcept { return c.retain_state_; }
  // Server calls: IsCanceled()/NotifyOnCancel() ask `source` (which outlives the controller).
  // Streaming (src/stream): what the call offered or accepted; created on first use.
  static std::shared_ptr<CallStreams>& streams(Controller& c) noexcept { return c.streams_; }
  // rpcz (src/call/span_record.h): the call's span when it is sampled, else null.
  static SpanRecord* span(const Controller& c) noexcept { return c.span_.get(); }
  static std::shared_ptr<SpanRecord>& span_handle(Controller& c) noexcept { return c.span_; }
  static void set_cancel_source(Controller& c, CancelSource* source) noexcept {
    c.cancel_source_ = source;
  }
  // Fan-out: the sub-calls' controllers by sub-channel index, and their owner.
  static void set_sub_calls(Controller& c, std::vector<const Controller*> subs,
                            std::shared_ptr<void> owner) {
    c.sub_controllers_ = std::move(subs);
    c.sub_calls_ = std::move(owner);
  }
};

}  // namespace arenarpc::internal
