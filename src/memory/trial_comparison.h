#pragma once
// CompareTrial: the candidates of an "auto" trial put on one scale. Calls differ in size, and a
// candidate whose turn happened to get smaller calls is not cheaper for it, so each call's CPU is
// scaled to a reference size (the median of the candidates' mean call sizes) by a cost model
// fitted over the trial:
//
//   cpu(call) = fixed + per_byte * wire_bytes(call)     (request + response wire bytes)
//
// per_byte comes from how cost follows size within each candidate's own calls (so differences
// between candidates do not pass for a size effect), fixed from the candidates' mean cost at their
// mean size. A candidate's figure is then its total CPU over its calls' total expected cost, times
// the expected cost at the reference size: the mean CPU per call it would cost on the trial's mix,
// which is what a server's CPU per call measures (a median would hide a strategy whose large calls
// cost more than the model says, or which pays for its blocks every few calls), with a ~95 %
// interval of that ratio (delta method). A candidate whose calls' mean size is more than
// kComparableRatio away from the reference is marked not comparable: the model would be
// extrapolated too far to rank it.
#include <cstdint>
#include <vector>

namespace arenarpc::memory {

struct TrialSample {
  uint64_t cpu_ns = 0;
  uint64_t wire_bytes = 0;  // request + response
};

struct CandidateCost {
  uint64_t samples = 0;
  double cpu_ns = 0;  // mean CPU per call, scaled to the reference size
  double low_ns = 0;  // ~95 % interval of that mean
  double high_ns = 0;
  double raw_cpu_ns = 0;    // median CPU per call as measured
  double mean_bytes = 0;    // mean wire bytes of its calls
  bool comparable = false;  // has samples, at a size near the reference
};

struct TrialComparison {
  double reference_bytes = 0;  // the median of the candidates' mean wire bytes per call
  double fixed_ns = 0;         // the fitted model (per_byte_ns 0: cost did not follow size)
  double per_byte_ns = 0;
  std::vector<CandidateCost> candidates;
};

// Calls of a candidate are comparable when (its mean + kSmallCallBytes) is within this factor of
// (the reference + kSmallCallBytes); below about a KiB a call's fixed work dominates its cost.
inline constexpr double kComparableRatio = 2.0;
inline constexpr double kSmallCallBytes = 1024;

// `samples[i]`: candidate i's counted calls. O(n log n) in the trial's calls; allocates.
TrialComparison CompareTrial(const std::vector<std::vector<TrialSample>>& samples);

}  // namespace arenarpc::memory
