#pragma once
// AutoChooser: the decision half of the "auto" strategy, for one method. It says which candidate
// serves the next call and whether to measure it, takes the measurements, and runs the trials
// (AutoSettings). It knows nothing of messages or clocks: the strategy feeds it CPU times, held
// bytes, wire sizes and the time, so its logic is testable with made-up figures.
//
// A trial ranks the candidates by CPU per call scaled to one call size (CompareTrial). The first
// trial and its confirmation choose afresh: the cheapest, unless its interval reaches that of a
// candidate holding less per call (memory settles what CPU cannot tell apart). In later trials the
// leader replaces the candidate serving the method only if it is switch_margin cheaper and its
// interval lies wholly below the incumbent's. While the intervals that decide overlap, and for
// candidates measured on calls of another size, the trial goes on for them (the leader, the
// incumbent, every candidate whose interval reaches the leader's, every one measured on other
// sizes), adding to their samples, up to kMaxRetries times; then the incumbent (or the leaner)
// stays.
//
// Between trials Next() costs a thread-local random draw and two relaxed loads; everything else
// (Record(), trials) takes a mutex, and runs only on measured calls.
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "arenarpc/memory/message_memory.h"
#include "memory/trial_comparison.h"

namespace arenarpc::memory {

class AutoChooser {
 public:
  struct Pick {
    uint32_t candidate;
    bool measure;
  };
  struct Measurement {
    uint64_t cpu_ns = 0;
    uint64_t held_bytes = 0;
    uint64_t request_bytes = 0;
    uint64_t response_bytes = 0;
  };
  // What a Record() or Unmeasured() changed: the caller may act on it (give back the memory of
  // the candidates a settled method left). The method's first call counts as starting its first
  // trial.
  enum class Step { kNone, kTrialStarted, kSettled };
  static constexpr uint32_t kMaxRetries = 2;
  static constexpr size_t kMaxCandidates = 32;

  // `names` are the candidates, in preference order (the first serves until a trial decides).
  AutoChooser(std::vector<std::string> names, const AutoSettings& settings);

  Pick Next() noexcept;
  // A measured call finished; `now_ms` is the wall clock (for recheck_interval and the report).
  Step Record(uint32_t candidate, const Measurement& m, int64_t now_ms);
  // A call picked for measurement could not be measured (it suspended or changed threads). Counts
  // toward the end of a trial, so that a trial ends even if no call can be measured.
  Step Unmeasured(int64_t now_ms);

  MemoryChoice Report() const;
  uint32_t chosen() const noexcept { return chosen_.load(std::memory_order_relaxed); }
  bool in_trial() const noexcept { return in_trial_.load(std::memory_order_relaxed); }
  // A call has been recorded (measured or not): the method has traffic.
  bool seen_calls() const noexcept { return seen_calls_.load(std::memory_order_relaxed); }
  // The first trial ended and the confirmation trial has not begun: the candidates are still to
  // be measured warm, so none should give back its memory yet.
  bool awaiting_confirmation() const noexcept {
    return awaiting_confirmation_.load(std::memory_order_relaxed);
  }

 private:
  struct Trial {
    uint32_t warm = 0;    // calls seen and discarded since the candidate's turn began
    uint64_t target = 0;  // counted calls wanted
    std::vector<TrialSample> calls;
    uint64_t held_sum = 0;
  };

  Step RecordLocked(uint32_t candidate, const Measurement& m, int64_t now_ms);  // mu_ held
  void StartTrial(std::string reason);    // mu_ held
  Step MaybeFinishTrial(int64_t now_ms);  // mu_ held
  Step FinishTrial(int64_t now_ms);       // mu_ held; kNone when the trial goes on for some
  Step CheckRecheck(int64_t now_ms);      // mu_ held, between trials
  // mu_ held, between trials: the reason for a trial when the request size moved (else "").
  std::string ShapeMoved();
  // mu_ held, between trials: counts `calls` into the rate window; the reason for a trial when
  // the rate moved past rate_change in two windows in a row, else "".
  std::string RateMoved(uint64_t calls, int64_t now_ms);
  // mu_ held, in a trial: counts a call (measured or not) into the trial's attempts and, with
  // rate_change on, into its call rate.
  void CountTrialCall(int64_t now_ms);
  // mu_ held: the time since the last call seen, at most `lull_ms`, and now_ms becomes that call.
  double BusyMsSince(int64_t now_ms, double lull_ms);
  void Retry(uint32_t mask);              // mu_ held
  uint64_t TrialSizeCalls() const noexcept;  // calls of one trial's round, warm-ups included

  const std::vector<std::string> names_;
  const AutoSettings settings_;
  std::atomic<bool> in_trial_{true};
  std::atomic<uint32_t> chosen_{0};
  std::atomic<uint64_t> turn_{0};  // round robin of a trial
  std::atomic<uint32_t> active_{0};  // bit i: candidate i takes turns in the trial
  std::atomic<bool> seen_calls_{false};
  std::atomic<bool> awaiting_confirmation_{false};  // mirrors confirm_ (read without mu_)

  mutable std::mutex mu_;
  std::vector<Trial> trial_;
  uint64_t trial_attempts_ = 0;
  uint32_t retries_ = 0;
  double reference_bytes_ = 0, fixed_ns_ = 0, per_byte_ns_ = 0;  // of the last finished trial
  std::vector<MemoryChoice::Candidate> figures_;                 // of the last finished trial
  uint64_t trials_ = 0, switches_ = 0;
  int64_t decided_ms_ = 0;
  uint64_t calls_since_ = 0;  // estimated calls of the method since the last trial ended
  bool confirm_ = false;      // the first trial ended: a second one follows once warm
  bool afresh_ = true;        // the trial running decides without favouring the incumbent
  double chosen_cpu_ns_ = 0;  // moving mean between trials
  // Request sizes of a set of calls: enough for their mean and spread.
  struct SizeSums {
    double sum = 0, square_sum = 0;
    uint64_t calls = 0;
    void Add(double bytes) noexcept;
    void Add(const SizeSums& other) noexcept;
    double Mean() const noexcept;
    double Variance() const noexcept;
  };
  // Request size: the trial's measured calls; the reference the windows are compared with (the
  // last trial's calls and windows after it, and how many windows it holds); between trials,
  // windows of kShapeWindowSamples sampled calls, how many windows in a row were past
  // shape_change, and those windows pooled.
  SizeSums trial_sizes_, reference_sizes_, window_sizes_, run_sizes_;
  uint32_t reference_windows_ = 0;
  uint32_t shape_strikes_ = 0;
  // Call rate, over busy time: a pause between two calls seen counts at most a lull bound (see
  // RateMoved). The last call seen (0: none), the trial's calls and busy time, the window being
  // counted, the rate of the first full window after the last trial (0: not yet), and how many
  // windows in a row were past rate_change from it.
  int64_t rate_last_ms_ = 0;
  double trial_busy_ms_ = 0;
  uint64_t trial_rate_calls_ = 0;
  double rate_window_busy_ms_ = 0;
  uint64_t rate_window_calls_ = 0;
  double decided_rate_ = 0;
  uint32_t rate_strikes_ = 0;
  std::string reason_;
  std::string trial_reason_;
  std::deque<MemoryChoice::Decision> history_;  // at most MemoryChoice::kHistory
};

}  // namespace arenarpc::memory
