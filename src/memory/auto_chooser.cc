#include "memory/auto_chooser.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "util/sampling.h"

namespace arenarpc::memory {
namespace {

constexpr double kMeanWeight = 1.0 / 16;  // moving means between trials
constexpr uint64_t kShapeSamples = 16;    // sampled calls before a size change can start a trial
// The first trial runs on a cold process: reuse's pools are still growing and malloc's heap is
// fresh, which favours some candidates over their steady state by 10-30 %. A second trial follows
// after this many trials' worth of calls.
constexpr uint64_t kConfirmAfterTrials = 16;

std::string Micros(uint64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", static_cast<double>(ns) / 1000);
  return text;
}

uint64_t Median(std::vector<uint64_t> values) {
  if (values.empty()) return 0;
  auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

}  // namespace

AutoChooser::AutoChooser(std::vector<std::string> names, const AutoSettings& settings)
    : names_(std::move(names)), settings_(settings), figures_(names_.size()) {
  std::lock_guard lock(mu_);
  StartTrial("first calls of the method");
}

AutoChooser::Pick AutoChooser::Next() noexcept {
  if (in_trial_.load(std::memory_order_relaxed)) {
    const uint64_t turn = turn_.fetch_add(1, std::memory_order_relaxed);
    return {static_cast<uint32_t>(turn / settings_.trial_block % names_.size()), true};
  }
  // Random, not every Nth call: methods that alternate on a thread are sampled alike.
  return {chosen_.load(std::memory_order_relaxed), util::OneIn(settings_.sample_every)};
}

void AutoChooser::Record(uint32_t candidate, const Measurement& m, int64_t now_ms) {
  std::lock_guard lock(mu_);
  request_bytes_ =
      request_bytes_ == 0
          ? static_cast<double>(m.request_bytes)
          : request_bytes_ + kMeanWeight * (static_cast<double>(m.request_bytes) - request_bytes_);
  if (!in_trial_.load(std::memory_order_relaxed)) {
    if (candidate == chosen_.load(std::memory_order_relaxed)) {
      chosen_cpu_ns_ += kMeanWeight * (static_cast<double>(m.cpu_ns) - chosen_cpu_ns_);
    }
    CheckRecheck(now_ms);
    return;
  }
  ++trial_attempts_;
  Trial& trial = trial_[candidate];
  if (trial.warm < settings_.warmup_calls) {
    ++trial.warm;
  } else {
    trial.cpu_ns.push_back(m.cpu_ns);
    trial.held_sum += m.held_bytes;
  }
  MaybeFinishTrial(now_ms);
}

void AutoChooser::Unmeasured(int64_t now_ms) {
  std::lock_guard lock(mu_);
  if (!in_trial_.load(std::memory_order_relaxed)) {
    CheckRecheck(now_ms);
    return;
  }
  ++trial_attempts_;
  MaybeFinishTrial(now_ms);
}

void AutoChooser::CheckRecheck(int64_t now_ms) {
  calls_since_ += settings_.sample_every;
  const double moved = decided_request_bytes_ > 0 ? request_bytes_ / decided_request_bytes_ : 1;
  if (calls_since_ >= kShapeSamples * settings_.sample_every &&
      (moved >= settings_.shape_change || moved * settings_.shape_change <= 1)) {
    StartTrial("request size moved from " +
               std::to_string(static_cast<uint64_t>(decided_request_bytes_)) + " to " +
               std::to_string(static_cast<uint64_t>(request_bytes_)) + " bytes");
  } else if (confirm_ && calls_since_ >= kConfirmAfterTrials * (uint64_t{settings_.warmup_calls} +
                                                                  settings_.trial_calls) *
                                             names_.size()) {
    confirm_ = false;
    StartTrial("confirmation once warm");
  } else if (calls_since_ >= settings_.recheck_calls) {
    StartTrial("periodic recheck (" + std::to_string(settings_.recheck_calls) + " calls)");
  } else if (now_ms - decided_ms_ >= int64_t{settings_.recheck_interval_ms}) {
    StartTrial("periodic recheck (" + std::to_string(settings_.recheck_interval_ms) + " ms)");
  }
}

void AutoChooser::StartTrial(std::string reason) {
  trial_.assign(names_.size(), Trial{});
  for (Trial& t : trial_) t.cpu_ns.reserve(settings_.trial_calls);
  trial_attempts_ = 0;
  trial_reason_ = std::move(reason);
  in_trial_.store(true, std::memory_order_relaxed);
}

void AutoChooser::MaybeFinishTrial(int64_t now_ms) {
  const uint64_t per_candidate = uint64_t{settings_.warmup_calls} + settings_.trial_calls;
  bool complete = true;
  for (const Trial& t : trial_) complete = complete && t.cpu_ns.size() >= settings_.trial_calls;
  if (complete || trial_attempts_ >= 4 * per_candidate * names_.size()) FinishTrial(now_ms);
}

void AutoChooser::FinishTrial(int64_t now_ms) {
  const uint64_t enough = std::max<uint64_t>(1, settings_.trial_calls / 4);
  const uint32_t current = chosen_.load(std::memory_order_relaxed);
  uint64_t leanest = UINT64_MAX;
  for (size_t i = 0; i < names_.size(); ++i) {
    const Trial& t = trial_[i];
    Figures& f = figures_[i];
    f.samples = t.cpu_ns.size();
    f.cpu_ns = Median(t.cpu_ns);
    f.held_bytes = t.cpu_ns.empty() ? 0 : t.held_sum / t.cpu_ns.size();
    if (f.samples >= enough) leanest = std::min(leanest, f.held_bytes);
  }
  // Measured, and within max_held_ratio of the leanest: may serve the method.
  const auto eligible = [&](size_t i) {
    const Figures& f = figures_[i];
    return f.samples >= enough &&
           (settings_.max_held_ratio == 0 ||
            static_cast<double>(f.held_bytes) <=
                settings_.max_held_ratio * static_cast<double>(leanest));
  };
  int best = -1;
  for (size_t i = 0; i < names_.size(); ++i) {
    if (eligible(i) && (best < 0 || figures_[i].cpu_ns < figures_[best].cpu_ns)) {
      best = static_cast<int>(i);
    }
  }
  std::string found;
  uint32_t next = current;
  if (best < 0) {
    found =
        "too few calls could be measured (handlers that suspend or finish on another "
        "thread): kept " +
        names_[current];
  } else {
    const Figures& incumbent = figures_[current];
    const bool incumbent_ok = eligible(current);
    const double bar = (1 - settings_.switch_margin) * static_cast<double>(incumbent.cpu_ns);
    if (!incumbent_ok || static_cast<double>(figures_[best].cpu_ns) < bar) {
      next = static_cast<uint32_t>(best);
    }
    found = names_[next] + " (";
    for (size_t i = 0; i < names_.size(); ++i) {
      if (i != 0) found += ", ";
      found +=
          names_[i] + " " +
          (figures_[i].samples >= enough ? Micros(figures_[i].cpu_ns) + " us" : std::string("-"));
      if (figures_[i].samples >= enough && !eligible(i)) found += " [holds > max_held_ratio]";
    }
    found += " per call)";
  }
  if (trials_ > 0 && next != current) ++switches_;
  confirm_ = trials_ == 0;
  ++trials_;
  reason_ = trial_reason_ + ": " + found;
  decided_ms_ = now_ms;
  calls_since_ = 0;
  chosen_cpu_ns_ = static_cast<double>(figures_[next].cpu_ns);
  decided_request_bytes_ = request_bytes_;
  chosen_.store(next, std::memory_order_relaxed);
  in_trial_.store(false, std::memory_order_relaxed);
}

MemoryChoice AutoChooser::Report() const {
  std::lock_guard lock(mu_);
  MemoryChoice choice;
  choice.chosen = names_[chosen_.load(std::memory_order_relaxed)];
  for (size_t i = 0; i < names_.size(); ++i) {
    choice.candidates.push_back(
        {names_[i], figures_[i].samples, figures_[i].cpu_ns, figures_[i].held_bytes});
  }
  choice.trials = trials_;
  choice.switches = switches_;
  choice.in_trial = in_trial_.load(std::memory_order_relaxed);
  choice.decided_unix_ms = decided_ms_;
  choice.chosen_cpu_ns = static_cast<uint64_t>(chosen_cpu_ns_);
  choice.reason = trials_ == 0 ? "first trial running" : reason_;
  return choice;
}

}  // namespace arenarpc::memory
