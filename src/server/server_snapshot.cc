#include "server/server_snapshot.h"

#include <algorithm>

#include "server/method_entry.h"
#include "server/server_state.h"
#include "stats/server_view.h"

namespace arenarpc::server {
namespace {

using stats::WindowSnapshot;

WindowStats ToWindowStats(const WindowSnapshot& w, int seconds) {
  WindowStats out;
  out.seconds = seconds;
  out.covered_seconds = w.seconds;
  out.calls = w.count;
  out.errors = w.errors;
  out.qps = w.qps();
  out.latency_p50_us = w.Percentile(50);
  out.latency_p90_us = w.Percentile(90);
  out.latency_p99_us = w.Percentile(99);
  out.latency_p999_us = w.Percentile(99.9);
  out.latency_max_us = w.max_us;
  out.latency_mean_us = w.mean_us();
  return out;
}

}  // namespace

MethodStats SnapshotMethod(const MethodEntry& entry,
                           std::chrono::steady_clock::time_point now) {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  MethodStats stats;
  stats.full_name = entry.full_name;
  const std::shared_ptr<MethodBinding> binding = entry.Binding();
  if (binding) stats.memory_mode = binding->mode;
  stats.calls = entry.calls.load(kRelaxed);
  stats.errors = entry.errors.load(kRelaxed);
  stats.rejected = entry.rejected.load(kRelaxed);
  stats.in_flight = entry.in_flight.load(kRelaxed);
  stats.max_in_flight = entry.max_in_flight.load(kRelaxed);
  const LatencyHistogram& latency = entry.latency;
  stats.latency_p50_us = latency.Percentile(50);
  stats.latency_p80_us = latency.Percentile(80);
  stats.latency_p90_us = latency.Percentile(90);
  stats.latency_p99_us = latency.Percentile(99);
  stats.latency_p999_us = latency.Percentile(99.9);
  stats.latency_max_us = latency.Max();
  stats.latency_mean_us = latency.Mean();
  stats.latency_sum_us = latency.Sum();
  stats.queue_p50_us = entry.queue_latency.Percentile(50);
  stats.queue_p99_us = entry.queue_latency.Percentile(99);
  stats.queue_max_us = entry.queue_latency.Max();
  stats.last_10s = ToWindowStats(entry.window.Snapshot(now, 10), 10);
  stats.last_60s = ToWindowStats(entry.window.Snapshot(now, 60), 60);
  for (const auto& [code, count] : entry.errors_by_code.NonZero()) {
    stats.errors_by_code.push_back({code, count});
  }
  stats.arena_bytes = entry.arena_bytes.load(kRelaxed);
  stats.arena_calls = entry.arena_calls.load(kRelaxed);
  if (binding) {
    stats.memory = binding->strategy->stats();
    stats.method_memory = binding->memory->stats();
    stats.memory_strategy_id = reinterpret_cast<uintptr_t>(binding->strategy.get());
    stats.memory_choice = binding->memory->Choice();
  }
  if (entry.presence) stats.presence_advice = entry.presence->Report();
  return stats;
}

std::vector<MethodStats> SnapshotMethods(const ServerState& state,
                                         std::chrono::steady_clock::time_point now) {
  std::vector<MethodStats> out;
  for (const auto& entry : state.config.registry.methods()) {
    if (!entry->builtin) out.push_back(SnapshotMethod(*entry, now));  // the application's only
  }
  std::sort(out.begin(), out.end(),
            [](const MethodStats& a, const MethodStats& b) { return a.full_name < b.full_name; });
  return out;
}

ServerStats SnapshotServer(ServerState& state) {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  const auto& counters = state.counters;
  ServerStats stats;
  stats.connections_accepted = counters.connections_accepted.load(kRelaxed);
  stats.connections_closed_idle = counters.connections_closed_idle.load(kRelaxed);
  stats.connections_closed_read_timeout = counters.connections_closed_read_timeout.load(kRelaxed);
  stats.connections_closed_first_byte_timeout =
      counters.connections_closed_first_byte_timeout.load(kRelaxed);
  stats.connections_closed_write_timeout = counters.connections_closed_write_timeout.load(kRelaxed);
  stats.connections_rejected = counters.connections_rejected.load(kRelaxed);
  stats.malformed_frames = counters.malformed_frames.load(kRelaxed);
  stats.rejected_timed_out = counters.rejected_timed_out.load(kRelaxed);
  stats.rejected_queue_wait = counters.rejected_queue_wait.load(kRelaxed);
  stats.canceled_before_start = counters.canceled_before_start.load(kRelaxed);
  stats.read_pauses = counters.read_pauses.load(kRelaxed);
  stats.refused_bytes_unread = counters.refused_bytes_unread.load(kRelaxed);
  stats.rejected_request_memory = state.message_memory.rejected_too_large.load(kRelaxed);
  stats.rejected_message_memory = state.message_memory.rejected_in_flight.load(kRelaxed);
  stats.message_memory_in_flight = state.message_memory.in_use();
  stats.message_memory_peak = state.message_memory.peak();
  stats.message_memory_trims = state.message_memory.trims();
  stats.rejected_fiber_limit = counters.rejected_fiber_limit.load(kRelaxed);
  stats.tls_handshakes = counters.tls_handshakes.load(kRelaxed);
  stats.tls_failures = counters.tls_failures.load(kRelaxed);
  stats.tls_refused = counters.tls_refused.load(kRelaxed);
  stats.rejected_auth = counters.rejected_auth.load(kRelaxed);
  if (state.runtime) stats.fibers = state.runtime->fibers().live();
  stats.queued = state.admission.queued();
  stats.concurrency_limit = state.admission.limit();
  stats.requests = counters.requests.load(kRelaxed);
  stats.rejected_stopping = counters.rejected_stopping.load(kRelaxed);
  stats.rejected_limit = counters.rejected_limit.load(kRelaxed);
  stats.rejected_unknown = counters.rejected_unknown.load(kRelaxed);
  stats.rejected_overcrowded = counters.rejected_overcrowded.load(kRelaxed);
  stats.in_flight = state.admission.in_flight();
  stats.connections_open = state.connections.size();
  stats.unwritten_held_bytes = state.connections.UnwrittenHeldBytes();
  if (state.capture) {
    const capture::CaptureCounters capture = state.capture->writer().counters();
    stats.capture_sampled = capture.sampled;
    stats.capture_written = capture.written;
    stats.capture_dropped = capture.dropped;
    stats.capture_write_errors = capture.write_errors;
    stats.capture_files_opened = capture.files_opened;
    stats.capture_queued_bytes = capture.queued_bytes;
  }
  return stats;
}

namespace {

class StateView final : public stats::ServerView {
 public:
  explicit StateView(std::weak_ptr<ServerState> state) : state_(std::move(state)) {}
  bool available() const override { return !state_.expired(); }
  ServerStats Server() const override {
    const auto state = state_.lock();
    return state ? SnapshotServer(*state) : ServerStats{};
  }
  std::vector<stats::MethodView> Methods(Clock::time_point now) const override {
    std::vector<stats::MethodView> out;
    const auto state = state_.lock();
    if (!state) return out;
    const auto streams = state->streams->Methods(now);
    for (const auto& entry : state->config.registry.methods()) {
      if (entry->builtin) continue;  // the pages describe the application's methods
      stats::MethodView view;
      if (auto it = streams.find(entry->full_name); it != streams.end()) view.streams = it->second;
      view.stats = SnapshotMethod(*entry, now);
      view.calls_per_second = entry->window.CountsPerSecond<60>(now);
      view.memory_points = entry->memory_series.Points(now);
      view.latency = entry->latency;
      out.push_back(std::move(view));
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
      return a.stats.full_name < b.stats.full_name;
    });
    return out;
  }
  std::vector<stats::ConnectionInfo> Connections() const override {
    const auto state = state_.lock();
    if (!state) return {};
    std::vector<stats::ConnectionInfo> rows = state->connections.Snapshot();
    // Both are by id: each stream joins its connection's row (one that closed meanwhile: none).
    auto row = rows.begin();
    for (stats::StreamInfo& stream : state->streams->Streams(Clock::now())) {
      while (row != rows.end() && row->id < stream.connection_id) ++row;
      if (row == rows.end()) break;
      if (row->id == stream.connection_id) row->streams.push_back(std::move(stream));
    }
    return rows;
  }
  ServerOptions Options() const override {
    const auto state = state_.lock();
    return state ? state->live.Effective(state->config.options) : ServerOptions{};
  }

 private:
  std::weak_ptr<ServerState> state_;
};

}  // namespace

std::shared_ptr<const stats::ServerView> MakeServerView(std::weak_ptr<ServerState> state) {
  return std::make_shared<StateView>(std::move(state));
}

}  // namespace arenarpc::server
