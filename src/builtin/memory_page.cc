#include "builtin/memory_page.h"

#include <chrono>
#include <utility>
#include <vector>

#include "builtin/page_view.h"

namespace arenarpc::builtin {
namespace {

double BytesPerCall(const MethodStats& m) {
  return m.arena_calls == 0 ? 0.0
                            : static_cast<double>(m.arena_bytes) / static_cast<double>(m.arena_calls);
}

// (name, value) of one method's memory, in the order both formats show them.
std::vector<std::pair<const char*, uint64_t>> MemoryCounters(const MethodStats& m) {
  const memory::MemoryStats& s = m.memory;
  return {{"arena_bytes", m.arena_bytes},
          {"arena_calls", m.arena_calls},
          {"acquired", s.acquired},
          {"released", s.released},
          {"page_allocations", s.page_allocations},
          {"page_cache_hits", s.page_cache_hits},
          {"page_cache_misses", s.page_cache_misses},
          {"pages_cached", s.pages_cached},
          {"pages_outstanding", s.pages_outstanding},
          {"reuses", s.reuses},
          {"rebuilds", s.rebuilds},
          {"trims", s.trims},
          {"objects_pooled", s.objects_pooled},
          {"retained_bytes_estimate", s.retained_bytes_estimate},
          {"requests_shaped", s.requests_shaped},
          {"responses_mirrored", s.responses_mirrored}};
}

void WriteChoiceJson(JsonWriter& json, const memory::MemoryChoice& c) {
  json.Key("auto").BeginObject()
      .Field("chosen", c.chosen)
      .Field("in_trial", c.in_trial)
      .Field("trials", c.trials)
      .Field("switches", c.switches)
      .Field("decided_unix_ms", c.decided_unix_ms)
      .Field("chosen_cpu_ns_per_call", c.chosen_cpu_ns)
      .Field("reason", c.reason);
  json.Key("candidates").BeginArray();
  for (const auto& candidate : c.candidates) {
    json.BeginObject()
        .Field("name", candidate.name)
        .Field("samples", candidate.samples)
        .Field("cpu_ns_per_call", candidate.cpu_ns)
        .Field("held_bytes_per_call", candidate.held_bytes)
        .EndObject();
  }
  json.EndArray().EndObject();
}

std::string ChoiceText(const memory::MemoryChoice& c) {
  std::string text = "  auto: serving with " + c.chosen + (c.in_trial ? " (trial running)" : "") +
                     ", " + std::to_string(c.trials) + " trials, " +
                     std::to_string(c.switches) + " switches\n";
  text += "  auto: " + c.reason + "\n";
  for (const auto& candidate : c.candidates) {
    text += "    " + candidate.name + ": " + FormatDouble(candidate.cpu_ns / 1000.0, 2) +
            " us CPU/call, " + std::to_string(candidate.held_bytes) + " bytes held/call (" +
            std::to_string(candidate.samples) + " calls)\n";
  }
  return text;
}

std::string AdviceText(const std::vector<memory::PresenceAdvice>& advice) {
  std::string text;
  for (const auto& a : advice) {
    text += "  advice: " + a.field + " holds " + FormatDouble(100 * a.share, 1) +
            "% of a response; declare it `" + a.suggested + "` instead of `" + a.declared +
            "` (the same wire bytes) so that reuse keeps its subtree\n";
  }
  return text;
}

void ServeMemory(const stats::ServerView& view, const BuiltinRequest& request,
                 BuiltinReply* reply) {
  if (RejectUnlessGet(request, reply)) return;
  std::vector<MethodStats> methods;
  for (stats::MethodView& m : view.Methods(std::chrono::steady_clock::now())) {
    methods.push_back(std::move(m.stats));
  }
  if (WantsJson(request)) {
    JsonWriter json;
    json.BeginObject().Key("methods").BeginObject();
    for (const MethodStats& m : methods) {
      json.Key(m.full_name);
      WriteMethodMemoryJson(json, m);
    }
    json.EndObject().EndObject();
    reply->content_type = "application/json";
    reply->body = json.Take() + "\n";
    return;
  }
  std::string text;
  for (const MethodStats& m : methods) {
    text += m.full_name + "\n";
    text += "  strategy = " + m.memory_mode + "\n";
    if (m.memory_choice) text += ChoiceText(*m.memory_choice);
    text += AdviceText(m.presence_advice);
    text += "  arena_bytes_per_call = " + FormatDouble(BytesPerCall(m), 1) + "\n";
    for (const auto& [name, value] : MemoryCounters(m)) {
      text += std::string("  ") + name + " = " + std::to_string(value) + "\n";
    }
  }
  text += "(strategy counters are the strategy's totals, shared by the methods it serves)\n";
  reply->body = std::move(text);
}

}  // namespace

void WriteMethodMemoryJson(JsonWriter& json, const MethodStats& m) {
  json.BeginObject()
      .Field("strategy", m.memory_mode)
      .Field("arena_bytes_per_call", BytesPerCall(m));
  for (const auto& [name, value] : MemoryCounters(m)) json.Field(name, value);
  if (m.memory_choice) WriteChoiceJson(json, *m.memory_choice);
  json.Key("presence_advice").BeginArray();
  for (const auto& a : m.presence_advice) {
    json.BeginObject()
        .Field("field", a.field)
        .Field("declared", a.declared)
        .Field("suggested", a.suggested)
        .Field("share", a.share)
        .EndObject();
  }
  json.EndArray();
  json.EndObject();
}

void AddMemoryPage(BuiltinRegistry* registry, std::shared_ptr<const stats::ServerView> view) {
  registry->Add("/memory", "per-method message memory: strategy, arena bytes per call, pools",
                BindView(view, ServeMemory));
}

}  // namespace arenarpc::builtin
