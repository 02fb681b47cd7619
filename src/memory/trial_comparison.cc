#include "memory/trial_comparison.h"

#include <algorithm>
#include <cmath>

namespace arenarpc::memory {
namespace {

// A call does some work whatever its size: the model never charges less than this many bytes'
// worth, so an empty call does not scale to infinity.
constexpr double kFloorBytes = 64;

struct Means {
  double bytes = 0, cpu = 0;
};

Means MeansOf(const std::vector<TrialSample>& calls) {
  Means m;
  for (const TrialSample& s : calls) {
    m.bytes += static_cast<double>(s.wire_bytes);
    m.cpu += static_cast<double>(s.cpu_ns);
  }
  if (!calls.empty()) {
    m.bytes /= static_cast<double>(calls.size());
    m.cpu /= static_cast<double>(calls.size());
  }
  return m;
}

}  // namespace

TrialComparison CompareTrial(const std::vector<std::vector<TrialSample>>& samples) {
  TrialComparison out;
  out.candidates.resize(samples.size());
  std::vector<Means> means;
  std::vector<double> sizes;  // of the candidates with calls
  uint64_t total_calls = 0;
  for (const auto& calls : samples) {
    means.push_back(MeansOf(calls));
    if (!calls.empty()) sizes.push_back(means.back().bytes);
    total_calls += calls.size();
  }
  if (total_calls == 0) return out;
  // The median candidate's: one candidate re-tried on many odd calls does not move it.
  std::sort(sizes.begin(), sizes.end());
  const size_t middle = sizes.size() / 2;
  out.reference_bytes =
      sizes.size() % 2 == 1 ? sizes[middle] : (sizes[middle - 1] + sizes[middle]) / 2;

  // Per-byte cost from the variation within each candidate's calls (one slope for all).
  double sxx = 0, sxy = 0;
  for (size_t c = 0; c < samples.size(); ++c) {
    for (const TrialSample& s : samples[c]) {
      const double dx = static_cast<double>(s.wire_bytes) - means[c].bytes;
      sxx += dx * dx;
      sxy += dx * (static_cast<double>(s.cpu_ns) - means[c].cpu);
    }
  }
  if (sxx > 0 && sxy > 0) {
    out.per_byte_ns = sxy / sxx;
    double fixed = 0;
    for (size_t c = 0; c < samples.size(); ++c) {
      fixed += static_cast<double>(samples[c].size()) *
               (means[c].cpu - out.per_byte_ns * means[c].bytes);
    }
    out.fixed_ns = std::max(fixed / static_cast<double>(total_calls), 0.0);
  }
  const auto model = [&](double bytes) {
    return std::max(out.fixed_ns + out.per_byte_ns * bytes, out.per_byte_ns * kFloorBytes);
  };
  const double at_reference = model(out.reference_bytes);

  for (size_t c = 0; c < samples.size(); ++c) {
    CandidateCost& cost = out.candidates[c];
    const auto& calls = samples[c];
    cost.samples = calls.size();
    if (calls.empty()) continue;
    cost.mean_bytes = means[c].bytes;
    const double ratio =
        (cost.mean_bytes + kSmallCallBytes) / (out.reference_bytes + kSmallCallBytes);
    cost.comparable = ratio <= kComparableRatio && ratio * kComparableRatio >= 1;

    std::vector<double> raw;
    raw.reserve(calls.size());
    for (const TrialSample& s : calls) raw.push_back(static_cast<double>(s.cpu_ns));
    std::nth_element(raw.begin(), raw.begin() + static_cast<std::ptrdiff_t>(raw.size() / 2),
                     raw.end());
    cost.raw_cpu_ns = raw[raw.size() / 2];
    // Total CPU over total expected work (the model, or the call count when cost did not follow
    // size), at the reference size: the mean CPU per call the candidate would cost on the
    // trial's mix. Not a median: a strategy whose large calls cost more than the model says, or
    // that pays for its blocks every few calls, pays that in CPU per call too.
    double cpu = 0, work = 0;
    for (const TrialSample& s : calls) {
      cpu += static_cast<double>(s.cpu_ns);
      work += out.per_byte_ns > 0 ? model(static_cast<double>(s.wire_bytes)) : 1;
    }
    const double per_work = cpu / work;
    const double n = static_cast<double>(calls.size());
    // ~95 % interval of that ratio (delta method): the spread of the calls' residuals from it.
    double residuals = 0;
    for (const TrialSample& s : calls) {
      const double expected = out.per_byte_ns > 0 ? model(static_cast<double>(s.wire_bytes)) : 1;
      const double r = static_cast<double>(s.cpu_ns) - per_work * expected;
      residuals += r * r;
    }
    const double mean_work = work / n;
    const double half_width =
        n > 1 ? 1.96 * std::sqrt(residuals / (n - 1) / n) / mean_work : per_work;
    const double scale = out.per_byte_ns > 0 ? at_reference : 1;
    cost.cpu_ns = per_work * scale;
    cost.low_ns = std::max(0.0, per_work - half_width) * scale;
    cost.high_ns = (per_work + half_width) * scale;
  }
  return out;
}

}  // namespace arenarpc::memory
