#pragma once
// LiveSettings: the settings a running server lets change (max_concurrency, max_queued_requests,
// memory modes, "auto"'s trial settings, the log level), their current values, and the history of
// changes. Set() applies a change to the part of the server it belongs to — Admission's atomics,
// a method's binding — and never holds a lock a call takes: a call sees the old or the new value.
// Changes are serialized by the object's own mutex, which only Set(), List() and Changes() take.

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "arenarpc/live_settings.h"
#include "arenarpc/server.h"
#include "stats/server_settings.h"

namespace arenarpc::capture {
class RequestCapture;
}  // namespace arenarpc::capture

namespace arenarpc::server {

struct ServerConfig;
class Admission;
struct MethodEntry;

class LiveSettings {
 public:
  // At Start(), once the methods are bound and admission configured, before any request.
  void Init(const ServerConfig& config);
  // At Start(), with the server's capture (null when capture is off), before any request.
  void SetCapture(capture::RequestCapture* capture);

  // Every setting: the live ones at their current values, then those fixed at Start().
  std::vector<ServerSetting> List(const ServerConfig& config) const;
  std::vector<SettingChange> Changes() const;
  // The options the server started with, with the live changes since applied.
  ServerOptions Effective(const ServerOptions& started) const;
  stats::SetVerdict Set(ServerConfig& config, Admission& admission, std::string_view name,
                        std::string_view value, const stats::SettingOrigin& who,
                        std::string* error);

 private:
  // mutex_ held. Each applies `value` or says why not (*error), changing nothing then.
  stats::SetVerdict SetMemoryMode(ServerConfig& config, std::string_view value, std::string* error);
  stats::SetVerdict SetMethodMode(ServerConfig& config, const std::string& method,
                                  std::string_view value, std::string* error);
  stats::SetVerdict SetAutoSetting(ServerConfig& config, std::string_view field,
                                   std::string_view value, std::string* error);
  // The strategy of mode `mode`, made with memory_ if none serves yet; nullptr and *error.
  std::shared_ptr<memory::MessageMemory> StrategyFor(const std::string& mode, std::string* error);
  // Binds `entry` to `strategy`: its next calls take the new binding; calls in flight finish on
  // theirs. false and *error when the strategy cannot serve the method's types.
  static bool Rebind(MethodEntry& entry, const std::string& mode,
                     std::shared_ptr<memory::MessageMemory> strategy, std::string* error);
  // The current value of a live setting (mutex_ held); nullopt-like "" + false when unknown.
  bool Current(const ServerConfig& config, std::string_view name, std::string* value) const;

  mutable std::mutex mutex_;
  MaxConcurrency max_concurrency_;
  int max_queued_requests_ = 0;
  std::string memory_mode_;  // what methods without an override follow
  std::map<std::string, std::string> method_modes_;  // live and Start()'s method_memory_mode
  std::set<std::string> follows_default_;            // methods that follow memory_mode
  memory::MemoryOptions memory_;                     // with the live "auto" settings
  // Strategies made from a mode name, shared by the methods that use it ("auto" is replaced
  // when its settings change).
  std::map<std::string, std::shared_ptr<memory::MessageMemory>> strategies_;
  std::deque<SettingChange> history_;
  capture::RequestCapture* capture_ = nullptr;  // the server's; lives as long as the server
};

}  // namespace arenarpc::server
