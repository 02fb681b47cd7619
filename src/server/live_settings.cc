#include "server/live_settings.h"

#include <google/protobuf/service.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <exception>
#include <optional>

#include "arenarpc/logging.h"
#include "arenarpc/rpcz.h"
#include "capture/capture_settings.h"
#include "capture/request_capture.h"
#include "server/method_entry.h"
#include "server/admission.h"
#include "server/server_config.h"

namespace arenarpc::server {
namespace {

constexpr int kMaxRpczSpansPerSecond = 100000;

using stats::SetVerdict;

constexpr std::string_view kMethodModePrefix = "method_memory_mode[";
constexpr std::string_view kAutoPrefix = "memory.automatic.";

std::string Quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

template <typename T>
std::optional<T> ParseNumber(std::string_view text) {
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::string FormatNumber(double value) {
  char buffer[32];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, error == std::errc() ? end : buffer);
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

std::optional<LogLevel> ParseLogLevel(std::string_view text) {
  std::string upper(text);
  std::ranges::transform(upper, upper.begin(), [](unsigned char c) { return std::toupper(c); });
  for (LogLevel level : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning, LogLevel::kError}) {
    if (upper == LogLevelName(level)) return level;
  }
  return std::nullopt;
}

// One of "auto"'s settings by its field name: how it reads, and how it is parsed into the struct.
struct AutoField {
  std::string_view name;
  std::string (*get)(const memory::AutoSettings&);
  // false: not a value of the field's type
  bool (*set)(memory::AutoSettings*, std::string_view);
};

template <auto Member>
AutoField Field(std::string_view name) {
  using T = std::remove_cvref_t<decltype(std::declval<memory::AutoSettings>().*Member)>;
  return AutoField{
      name,
      [](const memory::AutoSettings& s) {
        if constexpr (std::is_floating_point_v<T>) {
          return FormatNumber(s.*Member);
        } else {
          return std::to_string(s.*Member);
        }
      },
      [](memory::AutoSettings* s, std::string_view text) {
        const std::optional<T> value = ParseNumber<T>(text);
        if (value) s->*Member = *value;
        return value.has_value();
      }};
}

const std::vector<AutoField>& AutoFields() {
  using S = memory::AutoSettings;
  static const std::vector<AutoField> fields = {
      AutoField{"candidates",
                [](const S& s) {
                  std::vector<std::string> names;
                  for (const auto& candidate : s.candidates) {
                    names.emplace_back(candidate.name());
                  }
                  return Join(names);
                },
                [](S* s, std::string_view text) {
                  std::vector<NamedEnum<memory::MemoryMode>> names;
                  size_t start = 0;
                  while (start <= text.size()) {
                    const size_t comma = std::min(text.find(',', start), text.size());
                    names.emplace_back(text.substr(start, comma - start));
                    start = comma + 1;
                  }
                  s->candidates = std::move(names);
                  return true;  // ValidateAutoSettings names an unknown or empty one
                }},
      Field<&S::warmup_calls>("warmup_calls"),
      Field<&S::trial_calls>("trial_calls"),
      Field<&S::trial_block>("trial_block"),
      Field<&S::sample_every>("sample_every"),
      Field<&S::recheck_calls>("recheck_calls"),
      // A string has no unit: the flag spells it, in whole milliseconds.
      AutoField{"recheck_interval_ms",
                [](const S& s) { return std::to_string(s.recheck_interval.count()); },
                [](S* s, std::string_view text) {
                  const std::optional<int64_t> ms = ParseNumber<int64_t>(text);
                  if (ms) s->recheck_interval = std::chrono::milliseconds(*ms);
                  return ms.has_value();
                }},
      Field<&S::shape_change>("shape_change"),
      Field<&S::rate_change>("rate_change"),
      Field<&S::switch_margin>("switch_margin"),
      Field<&S::max_held_ratio>("max_held_ratio"),
  };
  return fields;
}

const AutoField* FindAutoField(std::string_view name) {
  for (const AutoField& field : AutoFields()) {
    if (field.name == name) return &field;
  }
  return nullptr;
}

// The settings fixed at Start(), as the options give them.
void AddFixed(const ServerOptions& o, std::vector<ServerSetting>* out) {
  auto line = [&](std::string name, std::string value) {
    out->push_back(ServerSetting{std::move(name), std::move(value), false, ""});
  };
  auto number = [](auto value) { return std::to_string(value); };
  line("num_threads", number(o.num_threads));
  line("worker_threads", number(o.worker_threads));
  line("memory.arena.start_block_size", number(o.memory.arena.start_block_size));
  line("memory.arena.max_block_size", number(o.memory.arena.max_block_size));
  line("memory.reuse.max_pooled_objects", number(o.memory.reuse.max_pooled_objects));
  line("memory.reuse.max_object_bytes", number(o.memory.reuse.max_object_bytes));
  line("memory.reuse.max_pool_bytes", number(o.memory.reuse.max_pool_bytes));
  line("memory.reuse.sample_every", number(o.memory.reuse.sample_every));
  line("memory.reuse.mirror_responses", o.memory.reuse.mirror_responses ? "true" : "false");
  line("memory.page_size", number(o.memory.page_size));
  line("memory.page_cache_capacity", number(o.memory.page_cache_capacity));
  line("memory.thread_cache_pages", number(o.memory.thread_cache_pages));
  line("max_body_size", number(o.max_body_size));
  line("max_queued_requests_per_connection", number(o.max_queued_requests_per_connection));
  line("max_connections", number(o.max_connections));
  line("max_unwritten_bytes", number(o.max_unwritten_bytes));
  line("max_queued_request_bytes", number(o.max_queued_request_bytes));
  line("max_streams_per_connection", number(o.max_streams_per_connection));
  line("max_stream_unconsumed_bytes", number(o.max_stream_unconsumed_bytes));
  line("max_request_memory", number(o.max_request_memory));
  line("max_inflight_message_memory", number(o.max_inflight_message_memory));
  line("idle_timeout_sec", number(o.idle_timeout_sec));
  // A string has no unit: durations are listed as flags spell them, in whole milliseconds.
  line("read_timeout_ms", number(o.read_timeout.count()));
  line("first_byte_timeout_ms", number(o.first_byte_timeout.count()));
  line("write_timeout_ms", number(o.write_timeout.count()));
  line("stream_idle_timeout_ms", number(o.stream_idle_timeout.count()));
  line("stop_deadline_ms", number(o.stop_deadline.count()));
  line("max_fibers", number(o.max_fibers));
  line("max_fibers_per_connection", number(o.max_fibers_per_connection));
  line("max_streaming_fibers", number(o.max_streaming_fibers));
  line("max_streaming_calls_per_connection", number(o.max_streaming_calls_per_connection));
  line("fiber_stack_size", number(o.fiber_stack_size));
  line("max_http_header_size", number(o.max_http_header_size));
  line("has_builtin_services", o.has_builtin_services ? "true" : "false");
  line("internal_port", number(o.internal_port));
  line("main_port_pages", o.main_port_pages == MainPortPages::kAll      ? "kAll"
                          : o.main_port_pages == MainPortPages::kHealth ? "kHealth"
                                                                        : "kNone");
  line("cors_allowed_origins", number(o.cors_allowed_origins.size()));
  line("settings_from_pages", o.settings_from_pages ? "true" : "false");
  line("auth", o.auth != nullptr ? "set" : "none");
  line("tls", o.tls.cert_file.empty() ? "off" : "on");
  line("interceptors", number(o.interceptors.size()));
  line("capture.directory", o.capture.directory.empty() ? "off" : o.capture.directory);
  line("capture.max_file_bytes", number(o.capture.max_file_bytes));
  line("capture.max_files", number(o.capture.max_files));
}

}  // namespace

void LiveSettings::Init(const ServerConfig& config) {
  const ServerOptions& options = config.options;
  std::lock_guard lock(mutex_);
  max_concurrency_ = options.max_concurrency;
  max_queued_requests_ = options.max_queued_requests;
  memory_mode_ = options.memory_strategy
                     ? std::string(options.memory_strategy->name()) + " (object)"
                     : std::string(options.memory_mode.name());
  method_modes_.clear();
  for (const auto& [method, mode] : options.method_memory_mode) {
    method_modes_[method] = std::string(mode.name());
  }
  for (const auto& [method, strategy] : options.method_memory_strategy) {
    method_modes_[method] = std::string(strategy->name()) + " (object)";
  }
  for (const auto& entry : config.registry.methods()) {
    if (!entry->builtin && method_modes_.count(entry->full_name) == 0) {
      follows_default_.insert(entry->full_name);
    }
  }
  memory_ = options.memory;
  strategies_ = config.strategies;
}

bool LiveSettings::Current(const ServerConfig& config, std::string_view name,
                           std::string* value) const {
  if (name == "max_concurrency") {
    *value = max_concurrency_.spec();
  } else if (name == "max_queued_requests") {
    *value = std::to_string(max_queued_requests_);
  } else if (name == "log_level") {
    *value = LogLevelName(MinLogLevel());
  } else if (name == "rpcz_spans_per_second") {
    *value = std::to_string(RpczSpansPerSecond());
  } else if (name == "capture.samples_per_second") {
    *value = capture_ != nullptr ? std::to_string(capture_->samples_per_second()) : "off";
  } else if (name == "memory_mode") {
    *value = memory_mode_;
  } else if (name.starts_with(kAutoPrefix)) {
    const AutoField* field = FindAutoField(name.substr(kAutoPrefix.size()));
    if (field == nullptr) return false;
    *value = field->get(memory_.automatic);
  } else if (name.starts_with(kMethodModePrefix) && name.ends_with("]")) {
    const std::string method(
        name.substr(kMethodModePrefix.size(), name.size() - kMethodModePrefix.size() - 1));
    const MethodEntry* entry = config.registry.FindMethod(method);
    if (entry == nullptr || entry->builtin) return false;
    const std::shared_ptr<MethodBinding> binding = entry->Binding();
    *value = binding ? binding->mode : "";
  } else {
    return false;
  }
  return true;
}

std::vector<ServerSetting> LiveSettings::List(const ServerConfig& config) const {
  std::vector<ServerSetting> out;
  std::lock_guard lock(mutex_);
  auto live = [&](std::string name, std::string help) {
    std::string value;
    Current(config, name, &value);
    out.push_back(ServerSetting{std::move(name), std::move(value), true, std::move(help)});
  };
  live("max_concurrency",
       "a number (0 = unlimited) or auto; calls past it get ELIMIT from the next call on");
  live("max_queued_requests", "a number >= 0 (0 = unlimited)");
  live("log_level", "DEBUG, INFO, WARNING or ERROR (the process's arenarpc logging)");
  live("rpcz_spans_per_second",
       "calls sampled into /rpcz per second, process-wide (0 = rpcz off; at most 100000)");
  live("capture.samples_per_second",
       "requests captured into the dump files per second (0 = paused; at most 100000); "
       "\"off\" when the server started without capture.directory");
  live("memory_mode",
       "heap, arena, paged, reuse, auto or a registered strategy: every method without a "
       "method_memory_mode of its own switches; calls in flight finish on their strategy");
  for (const auto& entry : config.registry.methods()) {
    if (entry->builtin) continue;
    live(std::string(kMethodModePrefix) + entry->full_name + "]",
         "as memory_mode, for this method alone");
  }
  for (const AutoField& field : AutoFields()) {
    live(std::string(kAutoPrefix) + std::string(field.name),
         "memory_mode auto's trials (docs/memory.md); methods on auto start over with a new "
         "trial");
  }
  AddFixed(config.options, &out);
  return out;
}

std::vector<SettingChange> LiveSettings::Changes() const {
  std::lock_guard lock(mutex_);
  return {history_.begin(), history_.end()};
}

void LiveSettings::SetCapture(capture::RequestCapture* capture) {
  std::lock_guard lock(mutex_);
  capture_ = capture;
}

ServerOptions LiveSettings::Effective(const ServerOptions& started) const {
  ServerOptions options = started;
  std::lock_guard lock(mutex_);
  if (capture_ != nullptr) options.capture.samples_per_second = capture_->samples_per_second();
  options.max_concurrency = max_concurrency_;
  options.max_queued_requests = max_queued_requests_;
  options.memory.automatic = memory_.automatic;
  if (!memory_mode_.ends_with(" (object)")) {
    options.memory_strategy.reset();
    options.memory_mode = memory_mode_;
  }
  for (const auto& [method, mode] : method_modes_) {
    if (mode.ends_with(" (object)")) continue;  // still the object Start() was given
    options.method_memory_strategy.erase(method);
    options.method_memory_mode[method] = mode;
  }
  return options;
}

std::shared_ptr<memory::MessageMemory> LiveSettings::StrategyFor(const std::string& mode,
                                                                 std::string* error) {
  auto& strategy = strategies_[mode];
  if (!strategy) {
    try {
      strategy = memory::MakeMessageMemory(mode, memory_, error);
    } catch (const std::exception& e) {  // a strategy's own resources (std::bad_alloc)
      *error = e.what();
    }
    if (!strategy) {
      strategies_.erase(mode);
      return nullptr;
    }
  }
  return strategy;
}

bool LiveSettings::Rebind(MethodEntry& entry, const std::string& mode,
                          std::shared_ptr<memory::MessageMemory> strategy, std::string* error) {
  auto binding = std::make_shared<MethodBinding>();
  binding->mode = mode;
  binding->service = entry.service_owner;
  binding->strategy = std::move(strategy);
  try {
    binding->memory =
        binding->strategy->Bind(entry.service->GetRequestPrototype(entry.descriptor),
                                entry.service->GetResponsePrototype(entry.descriptor));
  } catch (const std::exception& e) {
    *error = "memory mode " + Quoted(mode) + " cannot serve " + entry.full_name + ": " + e.what();
    return false;
  }
  entry.SetBinding(std::move(binding));
  return true;
}

SetVerdict LiveSettings::SetMemoryMode(ServerConfig& config, std::string_view value,
                                       std::string* error) {
  const std::string mode(value);
  const std::shared_ptr<memory::MessageMemory> strategy = StrategyFor(mode, error);
  if (!strategy) return SetVerdict::kInvalid;
  // A strategy that cannot serve one of the methods puts those already switched back.
  std::vector<std::pair<MethodEntry*, std::shared_ptr<MethodBinding>>> previous;
  for (const auto& entry : config.registry.methods()) {
    if (follows_default_.count(entry->full_name) == 0) continue;
    const std::shared_ptr<MethodBinding> before = entry->Binding();
    if (!Rebind(*entry, mode, strategy, error)) {
      for (auto& [done, binding] : previous) done->SetBinding(std::move(binding));
      return SetVerdict::kInvalid;
    }
    previous.emplace_back(entry.get(), before);
  }
  memory_mode_ = mode;
  return SetVerdict::kChanged;
}

SetVerdict LiveSettings::SetMethodMode(ServerConfig& config, const std::string& method,
                                       std::string_view value, std::string* error) {
  MethodEntry* entry = config.registry.FindMethod(method);
  if (entry == nullptr || entry->builtin) {
    *error = "no method " + Quoted(method) + " is registered";
    return SetVerdict::kUnknown;
  }
  const std::string mode(value);
  std::shared_ptr<memory::MessageMemory> strategy = StrategyFor(mode, error);
  if (!strategy || !Rebind(*entry, mode, std::move(strategy), error)) return SetVerdict::kInvalid;
  method_modes_[method] = mode;
  follows_default_.erase(method);
  return SetVerdict::kChanged;
}

SetVerdict LiveSettings::SetAutoSetting(ServerConfig& config, std::string_view field_name,
                                        std::string_view value, std::string* error) {
  const AutoField* field = FindAutoField(field_name);
  if (field == nullptr) {
    *error = "no setting memory.automatic." + std::string(field_name);
    return SetVerdict::kUnknown;
  }
  memory::MemoryOptions next = memory_;
  if (!field->set(&next.automatic, value)) {
    *error = Quoted(value) + " is not a number of memory.automatic." + std::string(field_name) +
             "'s type";
    return SetVerdict::kInvalid;
  }
  std::shared_ptr<memory::MessageMemory> fresh;
  try {
    fresh = memory::MakeMessageMemory(memory::MemoryMode::kAuto, next, error);
  } catch (const std::exception& e) {  // a strategy's own resources (std::bad_alloc)
    *error = e.what();
  }
  if (!fresh) return SetVerdict::kInvalid;
  // The methods "auto" (made from the settings) serves move to one made with the new settings.
  const auto old_it = strategies_.find("auto");
  const std::shared_ptr<memory::MessageMemory> old =
      old_it != strategies_.end() ? old_it->second : nullptr;
  std::vector<std::pair<MethodEntry*, std::shared_ptr<MethodBinding>>> rebound;
  for (const auto& entry : config.registry.methods()) {
    const std::shared_ptr<MethodBinding> before = entry->Binding();
    if (old == nullptr || before == nullptr || before->strategy != old) continue;
    if (!Rebind(*entry, "auto", fresh, error)) {
      for (auto& [done, binding] : rebound) done->SetBinding(std::move(binding));
      return SetVerdict::kInvalid;
    }
    rebound.emplace_back(entry.get(), before);
  }
  memory_ = std::move(next);
  strategies_["auto"] = std::move(fresh);
  return SetVerdict::kChanged;
}

SetVerdict LiveSettings::Set(ServerConfig& config, Admission& admission, std::string_view name, std::string_view value,
                             const stats::SettingOrigin& who, std::string* error) {
  std::lock_guard lock(mutex_);
  std::string old_value;
  if (!Current(config, name, &old_value)) {
    bool fixed = false;
    std::vector<ServerSetting> fixed_list;
    AddFixed(config.options, &fixed_list);
    for (const auto& setting : fixed_list) fixed = fixed || setting.name == name;
    if (fixed) {
      *error = std::string(name) +
               " is fixed at Start() and cannot change while the server runs (set it in "
               "ServerOptions and restart)";
      return SetVerdict::kNotLive;
    }
    *error = "no setting named " + Quoted(name) + " (/flags lists them)";
    return SetVerdict::kUnknown;
  }
  if (admission.stopping()) {
    *error = "the server is stopping";
    return SetVerdict::kGone;
  }
  SetVerdict verdict = SetVerdict::kChanged;
  if (name == "max_concurrency") {
    const MaxConcurrency parsed{value};
    if (!parsed.error().empty() || parsed.fixed_limit() < 0) {
      *error = "max_concurrency=" + std::string(value) + " is invalid (" +
               (parsed.error().empty() ? std::string("expected >= 0; 0 = unlimited")
                                       : parsed.error()) +
               ")";
      return SetVerdict::kInvalid;
    }
    admission.SetMaxConcurrency(parsed);
    max_concurrency_ = parsed;
  } else if (name == "max_queued_requests") {
    const std::optional<int> parsed = ParseNumber<int>(value);
    if (!parsed || *parsed < 0) {
      *error = "max_queued_requests=" + std::string(value) +
               " is invalid (expected a number >= 0; 0 = unlimited)";
      return SetVerdict::kInvalid;
    }
    admission.SetMaxQueuedRequests(*parsed);
    max_queued_requests_ = *parsed;
  } else if (name == "log_level") {
    const std::optional<LogLevel> level = ParseLogLevel(value);
    if (!level) {
      *error = "log_level=" + std::string(value) +
               " is invalid (expected DEBUG, INFO, WARNING or ERROR)";
      return SetVerdict::kInvalid;
    }
    SetMinLogLevel(*level);
  } else if (name == "rpcz_spans_per_second") {
    const std::optional<int> parsed = ParseNumber<int>(value);
    if (!parsed || *parsed < 0 || *parsed > kMaxRpczSpansPerSecond) {
      *error = "rpcz_spans_per_second=" + std::string(value) + " is invalid (expected 0.." +
               std::to_string(kMaxRpczSpansPerSecond) + "; 0 = off)";
      return SetVerdict::kInvalid;
    }
    SetRpczSpansPerSecond(*parsed);
  } else if (name == "capture.samples_per_second") {
    if (capture_ == nullptr) {
      *error = "capture is off: start the server with ServerOptions::capture.directory or "
               "ARENARPC_CAPTURE=DIR (samples_per_second=0 starts it paused)";
      return SetVerdict::kNotLive;
    }
    const std::optional<int> parsed = ParseNumber<int>(value);
    if (!parsed || *parsed < 0 || *parsed > capture::kMaxCaptureSamplesPerSecond) {
      *error = "capture.samples_per_second=" + std::string(value) + " is invalid (expected 0.." +
               std::to_string(capture::kMaxCaptureSamplesPerSecond) + "; 0 = paused)";
      return SetVerdict::kInvalid;
    }
    capture_->set_samples_per_second(*parsed);
  } else if (name == "memory_mode") {
    verdict = SetMemoryMode(config, value, error);
  } else if (name.starts_with(kAutoPrefix)) {
    verdict = SetAutoSetting(config, name.substr(kAutoPrefix.size()), value, error);
  } else {  // method_memory_mode[...]
    verdict = SetMethodMode(
        config,
        std::string(name.substr(kMethodModePrefix.size(),
                                name.size() - kMethodModePrefix.size() - 1)),
        value, error);
  }
  if (verdict != SetVerdict::kChanged) {
    *error = std::string(name) + "=" + std::string(value) + " is invalid: " + *error;
    return verdict;
  }
  SettingChange change{std::chrono::system_clock::now(), who.peer, who.principal,
                       std::string(name), std::move(old_value), ""};
  Current(config, name, &change.new_value);
  Log(LogLevel::kWarning, "live setting " + change.name + " changed from " +
                              Quoted(change.old_value) + " to " + Quoted(change.new_value) +
                              " by " + change.peer +
                              (change.principal.empty() ? "" : " (" + change.principal + ")"));
  history_.push_back(std::move(change));
  while (history_.size() > kSettingHistory) history_.pop_front();
  return SetVerdict::kChanged;
}

}  // namespace arenarpc::server
