#include "builtin/metrics_page.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <chrono>

#include "builtin/page_format.h"
#include "builtin/page_view.h"
#include "stats/process_stats.h"
#include "stats/strategy_totals.h"

namespace arenarpc::builtin {
namespace {

using prometheus::Labels;

// Upper bounds of the latency histogram's buckets, seconds.
const prometheus::Histogram::BucketBoundaries kLatencyBounds = {
    50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3,
    50e-3, 100e-3, 250e-3, 500e-3, 1,    2.5,    5,    10};

// The method's since-start histogram folded into kLatencyBounds: a fine bucket counts under the
// first bound its lowest value does not exceed (fine buckets are at most 0.4 % wide).
std::vector<double> FoldBuckets(const LatencyHistogram& latency) {
  std::vector<double> counts(kLatencyBounds.size() + 1, 0.0);
  size_t bound = 0;
  for (size_t i = 0; i < LatencyHistogram::kBucketCount; ++i) {
    const uint64_t n = latency.BucketCount(i);
    if (n == 0) continue;
    const double lowest_seconds = static_cast<double>(LatencyHistogram::BucketLowest(i)) * 1e-6;
    while (bound < kLatencyBounds.size() && lowest_seconds > kLatencyBounds[bound]) ++bound;
    counts[bound] += static_cast<double>(n);
  }
  return counts;
}

class Families {
 public:
  explicit Families(prometheus::Registry& registry) : registry_(registry) {}

  prometheus::Family<prometheus::Counter>& Counter(const std::string& name,
                                                   const std::string& help) {
    return prometheus::BuildCounter().Name(name).Help(help).Register(registry_);
  }
  prometheus::Family<prometheus::Gauge>& Gauge(const std::string& name, const std::string& help) {
    return prometheus::BuildGauge().Name(name).Help(help).Register(registry_);
  }

 private:
  prometheus::Registry& registry_;
};

// memory_mode "auto": which candidate serves the method, and the figures it was chosen by.
void AddChoiceMetrics(Families& f, const std::string& method, const memory::MemoryChoice& c) {
  auto& chosen = f.Gauge("arenarpc_memory_auto_chosen",
                         "1 for the strategy memory_mode \"auto\" serves the method with, else 0");
  auto& cpu = f.Gauge("arenarpc_memory_auto_cpu_seconds_per_call",
                      "Median thread CPU per call of each candidate in the method's last trial");
  auto& held = f.Gauge("arenarpc_memory_auto_held_bytes_per_call",
                       "Mean bytes a call's messages held at release in the last trial");
  for (const auto& candidate : c.candidates) {
    const Labels labels{{"method", method}, {"strategy", candidate.name}};
    chosen.Add(labels).Set(candidate.name == c.chosen ? 1 : 0);
    cpu.Add(labels).Set(static_cast<double>(candidate.cpu_ns) * 1e-9);
    held.Add(labels).Set(static_cast<double>(candidate.held_bytes));
  }
  f.Counter("arenarpc_memory_auto_trials_total", "Trials memory_mode \"auto\" finished")
      .Add({{"method", method}})
      .Increment(static_cast<double>(c.trials));
  f.Counter("arenarpc_memory_auto_switches_total",
            "Trials that moved the method to another strategy")
      .Add({{"method", method}})
      .Increment(static_cast<double>(c.switches));
  f.Gauge("arenarpc_memory_auto_decided_timestamp_seconds", "When the last trial ended")
      .Add({{"method", method}})
      .Set(static_cast<double>(c.decided_unix_ms) * 1e-3);
}

void AddMethodMetrics(Families& f, prometheus::Registry& registry,
                      const std::vector<stats::MethodView>& views) {
  auto& calls = f.Counter("arenarpc_server_calls_total",
                          "Calls whose handler completed (done->Run()), by method");
  auto& errors = f.Counter("arenarpc_server_errors_total",
                           "Failed or rejected calls by method and brpc error code "
                           "(code=\"other\": codes that are not brpc's)");
  auto& rejected = f.Counter("arenarpc_server_method_rejected_total",
                             "Calls of a method answered without running its handler");
  auto& latency = prometheus::BuildHistogram()
                      .Name("arenarpc_server_latency_seconds")
                      .Help("Latency from the request read off the socket to its reply queued, "
                            "since start")
                      .Register(registry);
  auto& window_latency = f.Gauge("arenarpc_server_window_latency_seconds",
                                 "Latency percentiles (100 = max) of the calls that ended in the window");
  auto& qps = f.Gauge("arenarpc_server_qps", "Calls completed per second over the last window");
  auto& in_flight = f.Gauge("arenarpc_server_method_in_flight", "Handlers running now");
  auto& max_in_flight =
      f.Gauge("arenarpc_server_method_max_in_flight", "The most handlers running at once");
  auto& arena_bytes = f.Counter("arenarpc_memory_arena_bytes_total",
                                "Arena bytes (SpaceAllocated) of the method's calls");
  auto& arena_calls = f.Counter("arenarpc_memory_arena_calls_total",
                                "Calls of the method whose messages lived on an arena");
  struct CounterField {
    const char* name;
    uint64_t memory::MemoryStats::*field;
    const char* help;
  };
  static const CounterField kCounters[] = {
      {"acquired", &memory::MemoryStats::acquired, "Message pairs handed out"},
      {"released", &memory::MemoryStats::released, "Message pairs returned"},
      {"page_allocations", &memory::MemoryStats::page_allocations, "Pages allocated"},
      {"page_cache_hits", &memory::MemoryStats::page_cache_hits, "Pages taken from the cache"},
      {"page_cache_misses", &memory::MemoryStats::page_cache_misses,
       "Pages the cache could not give"},
      {"reuses", &memory::MemoryStats::reuses, "Pooled messages reused"},
      {"rebuilds", &memory::MemoryStats::rebuilds, "Messages rebuilt instead of reused"},
      {"trims", &memory::MemoryStats::trims, "Pooled messages trimmed"},
      {"requests_shaped", &memory::MemoryStats::requests_shaped,
       "Requests fitted to their wire bytes"},
      {"responses_mirrored", &memory::MemoryStats::responses_mirrored,
       "Responses fitted to their request's shape"},
      {"calls_on_arena", &memory::MemoryStats::calls_on_arena,
       "Small calls the reuse strategy made on a paged arena"},
  };
  static const CounterField kGauges[] = {
      {"pages_cached", &memory::MemoryStats::pages_cached, "Pages in the page cache"},
      {"pages_outstanding", &memory::MemoryStats::pages_outstanding, "Pages in use"},
      {"objects_pooled", &memory::MemoryStats::objects_pooled, "Messages in the reuse pools"},
      {"retained_bytes_estimate", &memory::MemoryStats::retained_bytes_estimate,
       "Bytes the pooled messages hold, estimated"},
  };
  // Per method its own share (MethodStats::method_memory: its pairs and pools), so that a sum
  // over methods counts nothing twice; per strategy its totals, once (the page pool is only there).
  std::vector<prometheus::Family<prometheus::Counter>*> memory_counters, strategy_counters;
  for (const CounterField& c : kCounters) {
    memory_counters.push_back(&f.Counter(std::string("arenarpc_memory_") + c.name + "_total",
                                         std::string(c.help) + " (the method's own)"));
    strategy_counters.push_back(
        &f.Counter(std::string("arenarpc_strategy_memory_") + c.name + "_total",
                   std::string(c.help) + " (the strategy's total over its methods)"));
  }
  std::vector<prometheus::Family<prometheus::Gauge>*> memory_gauges, strategy_gauges;
  for (const CounterField& g : kGauges) {
    memory_gauges.push_back(&f.Gauge(std::string("arenarpc_memory_") + g.name,
                                     std::string(g.help) + " (the method's own)"));
    strategy_gauges.push_back(
        &f.Gauge(std::string("arenarpc_strategy_memory_") + g.name,
                 std::string(g.help) + " (the strategy's total over its methods)"));
  }
  for (const stats::StrategyTotals& s : stats::GroupByStrategy(views)) {
    // Strategy objects of one name (a user's own) add up under that name.
    const Labels labels{{"strategy", s.mode}};
    for (size_t i = 0; i < std::size(kCounters); ++i) {
      strategy_counters[i]->Add(labels).Increment(
          static_cast<double>(s.totals.*kCounters[i].field));
    }
    for (size_t i = 0; i < std::size(kGauges); ++i) {
      prometheus::Gauge& gauge = strategy_gauges[i]->Add(labels);
      gauge.Set(gauge.Value() + static_cast<double>(s.totals.*kGauges[i].field));
    }
  }

  for (const stats::MethodView& view : views) {
    const MethodStats& m = view.stats;
    const Labels method{{"method", m.full_name}};
    calls.Add(method).Increment(static_cast<double>(m.calls));
    rejected.Add(method).Increment(static_cast<double>(m.rejected));
    for (const ErrorCodeCount& e : m.errors_by_code) {
      errors.Add({{"method", m.full_name},
                  {"code", e.code == 0 ? std::string("other") : std::to_string(e.code)}})
          .Increment(static_cast<double>(e.count));
    }
    latency.Add(method, kLatencyBounds)
        .ObserveMultiple(FoldBuckets(view.latency),
                         static_cast<double>(view.latency.Sum()) * 1e-6);
    for (const WindowStats* w : {&m.last_10s, &m.last_60s}) {
      const std::string window = std::to_string(w->seconds) + "s";
      qps.Add({{"method", m.full_name}, {"window", window}}).Set(w->qps);
      const std::pair<const char*, int64_t> percentiles[] = {{"50", w->latency_p50_us},
                                                             {"90", w->latency_p90_us},
                                                             {"99", w->latency_p99_us},
                                                             {"99.9", w->latency_p999_us},
                                                             {"100", w->latency_max_us}};
      for (const auto& [percentile, us] : percentiles) {
        window_latency
            .Add({{"method", m.full_name}, {"window", window}, {"percentile", percentile}})
            .Set(static_cast<double>(us) * 1e-6);
      }
    }
    in_flight.Add(method).Set(static_cast<double>(m.in_flight));
    max_in_flight.Add(method).Set(static_cast<double>(m.max_in_flight));
    const Labels memory_labels{{"method", m.full_name}, {"strategy", m.memory_mode}};
    arena_bytes.Add(memory_labels).Increment(static_cast<double>(m.arena_bytes));
    arena_calls.Add(memory_labels).Increment(static_cast<double>(m.arena_calls));
    for (size_t i = 0; i < std::size(kCounters); ++i) {
      memory_counters[i]->Add(memory_labels)
          .Increment(static_cast<double>(m.method_memory.*kCounters[i].field));
    }
    for (size_t i = 0; i < std::size(kGauges); ++i) {
      memory_gauges[i]->Add(memory_labels)
          .Set(static_cast<double>(m.method_memory.*kGauges[i].field));
    }
    if (m.memory_choice) AddChoiceMetrics(f, m.full_name, *m.memory_choice);
  }
}

void AddServerMetrics(Families& f, const ServerStats& s) {
  f.Counter("arenarpc_server_requests_total", "Request frames decoded")
      .Add({})
      .Increment(static_cast<double>(s.requests));
  auto& rejected = f.Counter("arenarpc_server_rejected_total",
                             "Requests answered with an error without running a handler, by "
                             "reason (stopping: ELOGOFF, limit: ELIMIT, unknown_method: "
                             "ENOSERVICE/ENOMETHOD, overcrowded: EOVERCROWDED, timed_out: "
                             "ERPCTIMEDOUT, canceled: canceled by the client before starting)");
  const std::pair<const char*, uint64_t> by_reason[] = {{"stopping", s.rejected_stopping},
                                                        {"limit", s.rejected_limit},
                                                        {"unknown_method", s.rejected_unknown},
                                                        {"overcrowded", s.rejected_overcrowded},
                                                        {"timed_out", s.rejected_timed_out},
                                                        {"canceled", s.canceled_before_start}};
  for (const auto& [reason, n] : by_reason) {
    rejected.Add({{"reason", reason}}).Increment(static_cast<double>(n));
  }
  f.Counter("arenarpc_server_malformed_frames_total",
            "Malformed frames (each closed its connection)")
      .Add({})
      .Increment(static_cast<double>(s.malformed_frames));
  f.Counter("arenarpc_server_connections_accepted_total", "Connections accepted")
      .Add({})
      .Increment(static_cast<double>(s.connections_accepted));
  auto& closed = f.Counter("arenarpc_server_connections_closed_total",
                           "Connections the server closed, by reason");
  closed.Add({{"reason", "idle"}}).Increment(static_cast<double>(s.connections_closed_idle));
  closed.Add({{"reason", "read_timeout"}})
      .Increment(static_cast<double>(s.connections_closed_read_timeout));
  closed.Add({{"reason", "first_byte_timeout"}})
      .Increment(static_cast<double>(s.connections_closed_first_byte_timeout));
  closed.Add({{"reason", "write_timeout"}})
      .Increment(static_cast<double>(s.connections_closed_write_timeout));
  closed.Add({{"reason", "max_connections"}})
      .Increment(static_cast<double>(s.connections_rejected));
  f.Counter("arenarpc_server_read_pauses_total", "Times a connection's reading paused")
      .Add({})
      .Increment(static_cast<double>(s.read_pauses));
  f.Counter("arenarpc_server_refused_bytes_unread_total",
            "Bytes of large requests refused from their head and discarded unread")
      .Add({})
      .Increment(static_cast<double>(s.refused_bytes_unread));
  f.Gauge("arenarpc_server_connections", "Open connections")
      .Add({})
      .Set(static_cast<double>(s.connections_open));
  f.Gauge("arenarpc_server_in_flight", "Calls admitted and not yet answered")
      .Add({})
      .Set(static_cast<double>(s.in_flight));
  f.Gauge("arenarpc_server_queued", "Admitted calls waiting for a thread")
      .Add({})
      .Set(static_cast<double>(s.queued));
  f.Gauge("arenarpc_server_unwritten_held_bytes", "Memory held by unsent replies")
      .Add({})
      .Set(static_cast<double>(s.unwritten_held_bytes));
  f.Gauge("arenarpc_server_concurrency_limit", "max_concurrency in force (0 = none)")
      .Add({})
      .Set(static_cast<double>(s.concurrency_limit));
}

void AddProcessMetrics(Families& f, const stats::ProcessStats& p) {
  f.Counter("process_cpu_seconds_total", "User and system CPU time of the process")
      .Add({})
      .Increment(static_cast<double>(p.cpu_us()) * 1e-6);
  f.Gauge("process_resident_memory_bytes", "Resident memory of the process")
      .Add({})
      .Set(static_cast<double>(p.rss_bytes));
  f.Gauge("process_open_fds", "Open file descriptors").Add({}).Set(static_cast<double>(p.fd_count));
  f.Gauge("process_threads", "Threads of the process")
      .Add({})
      .Set(static_cast<double>(p.thread_count));
}

void ServeMetrics(const stats::ServerView& view, const BuiltinRequest& request,
                  BuiltinReply* reply) {
  if (RejectUnlessGet(request, reply)) return;
  reply->content_type = "text/plain; version=0.0.4; charset=utf-8";
  reply->body = RenderMetrics(view);
}

}  // namespace

std::string RenderMetrics(const stats::ServerView& view) {
  // A registry per scrape: the values are the server's own counters, copied in at this moment.
  prometheus::Registry registry;
  Families families(registry);
  AddMethodMetrics(families, registry, view.Methods(std::chrono::steady_clock::now()));
  AddServerMetrics(families, view.Server());
  AddProcessMetrics(families, stats::ReadProcessStats());
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

void AddMetricsPage(BuiltinRegistry* registry, std::shared_ptr<const stats::ServerView> view) {
  registry->Add("/metrics", "metrics in the Prometheus text format",
                BindView(view, ServeMetrics));
}

}  // namespace arenarpc::builtin
