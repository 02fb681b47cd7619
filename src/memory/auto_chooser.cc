#include "memory/auto_chooser.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <utility>

#include "util/sampling.h"

namespace arenarpc::memory {
namespace {

constexpr double kMeanWeight = 1.0 / 16;  // moving means between trials
constexpr uint64_t kShapeSamples = 16;    // sampled calls in a call rate window, at least
// Sampled calls whose mean request size is compared with the last trial's, and windows in a row
// past shape_change before a trial: a mix of sizes (one call in ten 10x the others) moves the mean
// of 16 calls by 2x often, that of 64 calls rarely, two such windows in a row practically never.
constexpr uint64_t kShapeWindowSamples = 64;
constexpr uint32_t kShapeStrikes = 2;
// A mix with a rarer, larger kind of call (one in twenty 100x the others) moves the mean of 64
// calls past 2x in one window of a few dozen, and two in a row every few thousand: the windows in
// a row past shape_change start a trial only when their pooled mean is also this many standard
// errors from the reference's (its spread of sizes standing for both; the mean of a few rare
// large calls has a long upper tail, so more than a normal law would need). The reference is the
// trial's calls and the windows after it that moved nothing, at least kShapeReferenceWindows of
// them before any comparison (a trial of ~300 calls holds too few of the rare kind to pin their
// share) and at most kShapeReferenceMaxWindows (a slow drift is not taken in for ever).
constexpr double kShapeDeviations = 6;
constexpr uint32_t kShapeReferenceWindows = 8;
constexpr uint32_t kShapeReferenceMaxWindows = 64;
// The first trial runs on a cold process: reuse's pools are still growing and malloc's heap is
// fresh, which favours some candidates over their steady state by 10-30 %. A second trial follows
// after this many trials' worth of calls, at most kConfirmAfterCalls (the process is as warm after
// that many calls whatever the trials' length).
constexpr uint64_t kConfirmAfterTrials = 16;
constexpr uint64_t kConfirmAfterCalls = 4096;
// A rate window counts at least this much busy time and kShapeSamples sampled calls.
constexpr double kRateWindowMs = 1000;
constexpr uint32_t kRateStrikes = 2;  // windows in a row past rate_change before a trial

std::string Micros(uint64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", static_cast<double>(ns) / 1000);
  return text;
}

// One more window measured: true once `needed` windows in a row moved by `factor` or more either
// way (`moved` = the window's figure / the decided one); a window within the factor resets them.
bool MovedInARow(double moved, double factor, uint32_t needed, uint32_t& strikes) {
  if (moved < factor && moved * factor > 1) {
    strikes = 0;
    return false;
  }
  return ++strikes >= needed;
}

}  // namespace

uint64_t AutoChooser::TrialSizeCalls() const noexcept {
  return (uint64_t{settings_.warmup_calls} + settings_.trial_calls) * names_.size();
}

AutoChooser::AutoChooser(std::vector<std::string> names, const AutoSettings& settings)
    : names_(std::move(names)), settings_(settings), figures_(names_.size()) {
  if (names_.empty() || names_.size() > kMaxCandidates) {
    throw std::invalid_argument("auto takes 1 to 32 candidates");
  }
  for (size_t i = 0; i < names_.size(); ++i) figures_[i].name = names_[i];
  std::lock_guard lock(mu_);
  StartTrial("first calls of the method");
}

AutoChooser::Pick AutoChooser::Next() noexcept {
  if (in_trial_.load(std::memory_order_relaxed)) {
    const uint64_t turn = turn_.fetch_add(1, std::memory_order_relaxed);
    // The turn-th of the candidates still in the trial, block by block.
    uint32_t mask = active_.load(std::memory_order_relaxed);
    if (mask == 0) return {chosen_.load(std::memory_order_relaxed), true};
    for (uint64_t skip = turn / settings_.trial_block % std::popcount(mask); skip > 0; --skip) {
      mask &= mask - 1;
    }
    return {static_cast<uint32_t>(std::countr_zero(mask)), true};
  }
  // Random, not every Nth call: methods that alternate on a thread are sampled alike.
  return {chosen_.load(std::memory_order_relaxed), util::OneIn(settings_.sample_every)};
}

AutoChooser::Step AutoChooser::Record(uint32_t candidate, const Measurement& m, int64_t now_ms) {
  std::lock_guard lock(mu_);
  const bool first = !seen_calls_.exchange(true, std::memory_order_relaxed);
  const Step step = RecordLocked(candidate, m, now_ms);
  return first && step == Step::kNone ? Step::kTrialStarted : step;
}

AutoChooser::Step AutoChooser::RecordLocked(uint32_t candidate, const Measurement& m,
                                            int64_t now_ms) {
  if (!in_trial_.load(std::memory_order_relaxed)) {
    window_sizes_.Add(static_cast<double>(m.request_bytes));
    if (candidate == chosen_.load(std::memory_order_relaxed)) {
      chosen_cpu_ns_ += kMeanWeight * (static_cast<double>(m.cpu_ns) - chosen_cpu_ns_);
    }
    return CheckRecheck(now_ms);
  }
  CountTrialCall(now_ms);
  trial_sizes_.Add(static_cast<double>(m.request_bytes));
  Trial& trial = trial_[candidate];
  if (trial.warm < settings_.warmup_calls) {
    ++trial.warm;
  } else {
    trial.calls.push_back({m.cpu_ns, m.request_bytes + m.response_bytes});
    trial.held_sum += m.held_bytes;
  }
  return MaybeFinishTrial(now_ms);
}

AutoChooser::Step AutoChooser::Unmeasured(int64_t now_ms) {
  std::lock_guard lock(mu_);
  const bool first = !seen_calls_.exchange(true, std::memory_order_relaxed);
  Step step;
  if (!in_trial_.load(std::memory_order_relaxed)) {
    step = CheckRecheck(now_ms);
  } else {
    CountTrialCall(now_ms);
    step = MaybeFinishTrial(now_ms);
  }
  return first && step == Step::kNone ? Step::kTrialStarted : step;
}

void AutoChooser::CountTrialCall(int64_t now_ms) {
  ++trial_attempts_;
  if (settings_.rate_change != 0) {
    trial_busy_ms_ += BusyMsSince(now_ms, kRateWindowMs);
    ++trial_rate_calls_;
  }
}

double AutoChooser::BusyMsSince(int64_t now_ms, double lull_ms) {
  const int64_t last = rate_last_ms_;
  rate_last_ms_ = now_ms;
  if (last == 0 || now_ms <= last) return 0;
  return std::min(static_cast<double>(now_ms - last), lull_ms);
}

// The rate is calls per second of busy time, so that traffic in bursts (a batch every minute, a
// benchmark pressing several servers in turn) reads as a steady rate, not as one that moves with
// every pause. A pause between two sampled calls counts at most
// 2 x rate_change x the sampling interval at the reference rate (the decided one, or the trial's
// before it is known), and at least a second: a lasting drop by rate_change or more still measures
// as one (the capped gaps read at least 2 x rate_change slower), while a pause between bursts
// adds a bounded share to its window.
std::string AutoChooser::RateMoved(uint64_t calls, int64_t now_ms) {
  if (settings_.rate_change == 0) return "";
  const double reference = decided_rate_ > 0   ? decided_rate_
                           : trial_busy_ms_ > 0 ? static_cast<double>(trial_rate_calls_) * 1000 /
                                                      trial_busy_ms_
                                                : 0;
  const double lull_ms =
      reference > 0 ? std::max(kRateWindowMs, 2 * settings_.rate_change * 1000 *
                                                  static_cast<double>(settings_.sample_every) /
                                                  reference)
                    : std::numeric_limits<double>::infinity();
  rate_window_busy_ms_ += BusyMsSince(now_ms, lull_ms);
  rate_window_calls_ += calls;
  if (rate_window_busy_ms_ < kRateWindowMs ||
      rate_window_calls_ < kShapeSamples * settings_.sample_every) {
    return "";
  }
  const double rate = static_cast<double>(rate_window_calls_) * 1000 / rate_window_busy_ms_;
  rate_window_busy_ms_ = 0;
  rate_window_calls_ = 0;
  if (decided_rate_ == 0) {
    decided_rate_ = rate;
    return "";
  }
  if (!MovedInARow(rate / decided_rate_, settings_.rate_change, kRateStrikes, rate_strikes_)) {
    return "";
  }
  return "call rate moved from " + std::to_string(static_cast<uint64_t>(decided_rate_)) + " to " +
         std::to_string(static_cast<uint64_t>(rate)) + " per second";
}

void AutoChooser::SizeSums::Add(double bytes) noexcept {
  sum += bytes;
  square_sum += bytes * bytes;
  ++calls;
}

void AutoChooser::SizeSums::Add(const SizeSums& other) noexcept {
  sum += other.sum;
  square_sum += other.square_sum;
  calls += other.calls;
}

double AutoChooser::SizeSums::Mean() const noexcept {
  return calls == 0 ? 0 : sum / static_cast<double>(calls);
}

double AutoChooser::SizeSums::Variance() const noexcept {
  const double mean = Mean();
  return calls == 0 ? 0 : std::max(0.0, square_sum / static_cast<double>(calls) - mean * mean);
}

std::string AutoChooser::ShapeMoved() {
  if (window_sizes_.calls < kShapeWindowSamples) return "";
  const SizeSums window = std::exchange(window_sizes_, {});
  if (reference_windows_ < kShapeReferenceWindows) {
    reference_sizes_.Add(window);
    ++reference_windows_;
    return "";
  }
  const double reference = reference_sizes_.Mean();
  const double moved = reference > 0 ? window.Mean() / reference : 1;
  const bool in_a_row = MovedInARow(moved, settings_.shape_change, kShapeStrikes, shape_strikes_);
  if (shape_strikes_ == 0) {
    // The traffic as it was: these windows (and a run of them the spread explained) join the
    // reference, up to its bound.
    run_sizes_.Add(window);
    const uint32_t windows = static_cast<uint32_t>(run_sizes_.calls / kShapeWindowSamples);
    if (reference_windows_ + windows <= kShapeReferenceMaxWindows) {
      reference_sizes_.Add(run_sizes_);
      reference_windows_ += windows;
    }
    run_sizes_ = {};
    return "";
  }
  run_sizes_.Add(window);
  if (!in_a_row) return "";
  const double standard_error =
      std::sqrt(reference_sizes_.Variance() * (1 / static_cast<double>(run_sizes_.calls) +
                                               1 / static_cast<double>(reference_sizes_.calls)));
  if (std::abs(run_sizes_.Mean() - reference) <= kShapeDeviations * standard_error) return "";
  return "request size moved from " + std::to_string(static_cast<uint64_t>(reference)) + " to " +
         std::to_string(static_cast<uint64_t>(run_sizes_.Mean())) + " bytes";
}

AutoChooser::Step AutoChooser::CheckRecheck(int64_t now_ms) {
  calls_since_ += settings_.sample_every;
  std::string rate_moved = RateMoved(settings_.sample_every, now_ms);
  std::string shape_moved = ShapeMoved();
  if (!rate_moved.empty()) {
    StartTrial(std::move(rate_moved));
  } else if (!shape_moved.empty()) {
    StartTrial(std::move(shape_moved));
  } else if (confirm_ && calls_since_ >= std::min(kConfirmAfterCalls,
                                                  kConfirmAfterTrials * TrialSizeCalls())) {
    confirm_ = false;
    awaiting_confirmation_.store(false, std::memory_order_relaxed);
    StartTrial("confirmation once warm");
    afresh_ = true;  // the first trial's choice was made on a cold process
  } else if (calls_since_ >= settings_.recheck_calls) {
    StartTrial("periodic recheck (" + std::to_string(settings_.recheck_calls) + " calls)");
  } else if (now_ms - decided_ms_ >= settings_.recheck_interval.count()) {
    StartTrial("periodic recheck (" + std::to_string(settings_.recheck_interval.count()) + " ms)");
  } else {
    return Step::kNone;
  }
  return Step::kTrialStarted;
}

void AutoChooser::StartTrial(std::string reason) {
  trial_.assign(names_.size(), Trial{});
  for (Trial& t : trial_) {
    t.target = settings_.trial_calls;
    t.calls.reserve(std::size_t{settings_.trial_calls} * (1 + kMaxRetries));
  }
  trial_attempts_ = 0;
  trial_sizes_ = {};
  trial_busy_ms_ = 0;
  trial_rate_calls_ = 0;
  retries_ = 0;
  trial_reason_ = std::move(reason);
  // The first trial's incumbent serves only because it comes first.
  afresh_ = trials_ == 0;
  active_.store(names_.size() == kMaxCandidates ? ~0u : (1u << names_.size()) - 1,
                std::memory_order_relaxed);
  in_trial_.store(true, std::memory_order_relaxed);
}

void AutoChooser::Retry(uint32_t mask) {
  for (size_t i = 0; i < names_.size(); ++i) {
    if ((mask >> i & 1) == 0) continue;
    trial_[i].warm = 0;  // its turn comes after the others': warm up again
    trial_[i].target = trial_[i].calls.size() + settings_.trial_calls;
  }
  ++retries_;
  trial_attempts_ = 0;
  active_.store(mask, std::memory_order_relaxed);
}

AutoChooser::Step AutoChooser::MaybeFinishTrial(int64_t now_ms) {
  const uint64_t per_candidate = uint64_t{settings_.warmup_calls} + settings_.trial_calls;
  const uint32_t mask = active_.load(std::memory_order_relaxed);
  bool complete = true;
  for (size_t i = 0; i < names_.size(); ++i) {
    if ((mask >> i & 1) != 0) complete = complete && trial_[i].calls.size() >= trial_[i].target;
  }
  if (complete) return FinishTrial(now_ms);
  if (trial_attempts_ >= 4 * per_candidate * static_cast<uint64_t>(std::popcount(mask))) {
    retries_ = kMaxRetries;  // calls cannot be measured: decide on what there is
    return FinishTrial(now_ms);
  }
  return Step::kNone;
}

AutoChooser::Step AutoChooser::FinishTrial(int64_t now_ms) {
  const uint64_t enough = std::max<uint64_t>(1, settings_.trial_calls / 4);
  const uint32_t current = chosen_.load(std::memory_order_relaxed);
  std::vector<std::vector<TrialSample>> samples;
  for (const Trial& t : trial_) samples.push_back(t.calls);
  const TrialComparison comparison = CompareTrial(samples);
  uint64_t leanest = UINT64_MAX;
  for (size_t i = 0; i < names_.size(); ++i) {
    const Trial& t = trial_[i];
    const CandidateCost& c = comparison.candidates[i];
    MemoryChoice::Candidate& f = figures_[i];
    f.samples = c.samples;
    f.cpu_ns = static_cast<uint64_t>(c.cpu_ns);
    f.cpu_ns_low = static_cast<uint64_t>(c.low_ns);
    f.cpu_ns_high = static_cast<uint64_t>(c.high_ns);
    f.raw_cpu_ns = static_cast<uint64_t>(c.raw_cpu_ns);
    f.wire_bytes = static_cast<uint64_t>(c.mean_bytes);
    f.comparable = c.comparable;
    // Held bytes follow size too: per byte of its calls, at the reference size.
    const double wire_sum = c.mean_bytes * static_cast<double>(c.samples);
    if (t.calls.empty()) {
      f.held_bytes = 0;
    } else if (wire_sum > 0) {
      f.held_bytes = static_cast<uint64_t>(static_cast<double>(t.held_sum) *
                                           comparison.reference_bytes / wire_sum);
    } else {
      f.held_bytes = t.held_sum / t.calls.size();
    }
    if (f.samples >= enough && f.comparable) leanest = std::min(leanest, f.held_bytes);
  }
  reference_bytes_ = comparison.reference_bytes;
  fixed_ns_ = comparison.fixed_ns;
  per_byte_ns_ = comparison.per_byte_ns;
  const auto measured = [&](size_t i) { return figures_[i].samples >= enough; };
  // Measured, at the trial's call size, and within max_held_ratio of the leanest: may serve.
  const auto eligible = [&](size_t i) {
    const MemoryChoice::Candidate& f = figures_[i];
    return measured(i) && f.comparable &&
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
  const bool incumbent_ok = eligible(current);
  const auto apart = [&](size_t a, size_t b) {
    return figures_[a].cpu_ns_high < figures_[b].cpu_ns_low;
  };
  const auto clearly_cheaper = [&](size_t a, size_t b) {
    return static_cast<double>(figures_[a].cpu_ns) <
               (1 - settings_.switch_margin) * static_cast<double>(figures_[b].cpu_ns) &&
           apart(a, b);
  };
  // Memory settles what CPU cannot tell apart: a candidate is chosen over one that holds
  // switch_margin less per call only when its interval lies wholly below that one's (otherwise a
  // trial's noise could put a method on a strategy that holds twice the memory for no gain).
  // Not switch_margin below: that would give up to the margin in CPU for memory per call, which
  // shows little in the process's RSS (docs/benchmarks.md).
  const auto leaner = [&](size_t a, size_t b) {
    return static_cast<double>(figures_[a].held_bytes) <
           (1 - settings_.switch_margin) * static_cast<double>(figures_[b].held_bytes);
  };
  int choice = -1;  // the cheapest candidate measurably cheaper than every leaner one
  for (size_t i = 0; i < names_.size(); ++i) {
    if (!eligible(i) || (choice >= 0 && figures_[i].cpu_ns >= figures_[choice].cpu_ns)) continue;
    bool earns_its_memory = true;
    for (size_t j = 0; j < names_.size() && earns_its_memory; ++j) {
      if (j != i && eligible(j) && leaner(j, i) && !apart(i, j)) {
        earns_its_memory = false;
      }
    }
    if (earns_its_memory) choice = static_cast<int>(i);
  }
  if (best >= 0 && retries_ < kMaxRetries) {
    // Go on for whatever could still change the decision: candidates measured on other sizes,
    // and, while the leader may or may not be switch_margin cheaper than the incumbent (its
    // interval reaches below the bar and overlaps the incumbent's), the two and whatever overlaps
    // the leader.
    uint32_t again = 0;
    for (size_t i = 0; i < names_.size(); ++i) {
      if (measured(i) && !figures_[i].comparable) again |= 1u << i;
    }
    const double bar =
        (1 - settings_.switch_margin) * static_cast<double>(figures_[current].cpu_ns);
    if (!afresh_ && static_cast<uint32_t>(best) != current && incumbent_ok &&
        static_cast<double>(figures_[best].cpu_ns_low) < bar && !apart(best, current)) {
      for (size_t i = 0; i < names_.size(); ++i) {
        if (eligible(i) && !apart(best, i)) again |= 1u << i;
      }
      again |= 1u << current;
    } else if (afresh_ || static_cast<uint32_t>(best) != current) {
      // The leader will serve: a runner-up whose interval reaches the leader's is as likely the
      // cheaper one, so both go on rather than the leader winning a coin flip.
      for (size_t i = 0; i < names_.size(); ++i) {
        if (i != static_cast<size_t>(best) && eligible(i) && !apart(best, i)) {
          again |= 1u << i | 1u << best;
        }
      }
    }
    // The cheapest by CPU gave way to a leaner one it may or may not be clearly cheaper than.
    if (choice != best && !apart(best, choice)) again |= 1u << best | 1u << choice;
    if (again != 0) {
      Retry(again);
      return Step::kNone;
    }
  }
  std::string found;
  uint32_t next = current;
  if (best < 0) {
    found =
        "too few calls could be measured at a comparable size (handlers that suspend or "
        "finish on another thread, or calls of very different sizes): kept " +
        names_[current];
  } else {
    // After the confirmation the incumbent stays unless the choice is clearly cheaper, or leaner
    // and not clearly dearer.
    const auto to = static_cast<uint32_t>(choice);
    if (afresh_ || !incumbent_ok || clearly_cheaper(to, current) ||
        (leaner(to, current) && !clearly_cheaper(current, to))) {
      next = to;
    }
    found = names_[next];
    if (next != static_cast<uint32_t>(best)) {
      found += (next == current ? " kept (" : " (") + names_[best] + " not clearly cheaper";
      if (leaner(next, best)) found += ", holds more per call";
      found += ")";
    }
    found += " (per call of " + std::to_string(static_cast<uint64_t>(reference_bytes_)) +
             " wire bytes: ";
    for (size_t i = 0; i < names_.size(); ++i) {
      if (i != 0) found += ", ";
      found +=
          names_[i] + " " + (measured(i) ? Micros(figures_[i].cpu_ns) + " us" : std::string("-"));
      if (measured(i) && !figures_[i].comparable) {
        found += " [measured on calls of " + std::to_string(figures_[i].wire_bytes) + " bytes]";
      } else if (measured(i) && !eligible(i)) {
        found += " [holds > max_held_ratio]";
      }
    }
    found += ")";
  }
  if (trials_ > 0 && next != current) ++switches_;
  confirm_ = trials_ == 0;
  awaiting_confirmation_.store(confirm_, std::memory_order_relaxed);
  ++trials_;
  reason_ = trial_reason_ + ": " + found;
  if (history_.size() == MemoryChoice::kHistory) history_.pop_front();
  history_.push_back({now_ms, names_[current], names_[next], reason_});
  decided_ms_ = now_ms;
  calls_since_ = 0;
  chosen_cpu_ns_ = static_cast<double>(figures_[next].raw_cpu_ns);
  reference_sizes_ = trial_sizes_;
  reference_windows_ = 0;
  window_sizes_ = {};
  run_sizes_ = {};
  shape_strikes_ = 0;
  rate_window_busy_ms_ = 0;
  rate_window_calls_ = 0;
  decided_rate_ = 0;
  rate_strikes_ = 0;
  chosen_.store(next, std::memory_order_relaxed);
  in_trial_.store(false, std::memory_order_relaxed);
  return Step::kSettled;
}

MemoryChoice AutoChooser::Report() const {
  std::lock_guard lock(mu_);
  MemoryChoice choice;
  choice.chosen = names_[chosen_.load(std::memory_order_relaxed)];
  choice.candidates = figures_;
  choice.reference_bytes = static_cast<uint64_t>(reference_bytes_);
  choice.fixed_ns = fixed_ns_;
  choice.ns_per_kib = per_byte_ns_ * 1024;
  choice.trials = trials_;
  choice.switches = switches_;
  choice.in_trial = in_trial_.load(std::memory_order_relaxed);
  choice.decided_unix_ms = decided_ms_;
  choice.chosen_cpu_ns = static_cast<uint64_t>(chosen_cpu_ns_);
  choice.reason = trials_ == 0 ? "first trial running" : reason_;
  choice.history.assign(history_.begin(), history_.end());
  return choice;
}

}  // namespace arenarpc::memory
