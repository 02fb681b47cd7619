#include "memory/trial_comparison.h"

#include <algorithm>
#include <cmath>

namespace arenarpc::memory {
namespace {

// A call does some work whatever its size: the model never charges less than this many bytes'
// worth, so an empty call does not scale to infinity.
constexpr double kFloorBytes = 64;

struct Scaled {
  double cpu_ns = 0, weight = 0;
  bool operator<(const Scaled& other) const noexcept { return cpu_ns < other.cpu_ns; }
};

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

  std::vector<Scaled> scaled;
  for (size_t c = 0; c < samples.size(); ++c) {
    CandidateCost& cost = out.candidates[c];
    const auto& calls = samples[c];
    cost.samples = calls.size();
    if (calls.empty()) continue;
    cost.mean_bytes = means[c].bytes;
    const double ratio =
        (cost.mean_bytes + kSmallCallBytes) / (out.reference_bytes + kSmallCallBytes);
    cost.comparable = ratio <= kComparableRatio && ratio * kComparableRatio >= 1;

    scaled.clear();
    for (const TrialSample& s : calls) scaled.push_back({static_cast<double>(s.cpu_ns), 1});
    std::sort(scaled.begin(), scaled.end());
    cost.raw_cpu_ns = scaled[scaled.size() / 2].cpu_ns;
    if (out.per_byte_ns > 0) {
      // Each call weighs its expected work: a tiny call says little about the cost per byte.
      scaled.clear();
      for (const TrialSample& s : calls) {
        const double expected = model(static_cast<double>(s.wire_bytes));
        scaled.push_back({static_cast<double>(s.cpu_ns) * at_reference / expected, expected});
      }
      std::sort(scaled.begin(), scaled.end());
    }
    double total = 0, squares = 0;
    for (const Scaled& s : scaled) {
      total += s.weight;
      squares += s.weight * s.weight;
    }
    // ~95 % interval of the median: quantiles 1/2 -+ 0.98 / sqrt(effective number of calls).
    const double half_width = 0.98 / std::sqrt(total * total / squares);
    const auto quantile = [&](double q) {
      double seen = 0;
      for (const Scaled& s : scaled) {
        seen += s.weight;
        if (seen >= q * total) return s.cpu_ns;
      }
      return scaled.back().cpu_ns;
    };
    cost.cpu_ns = quantile(0.5);
    cost.low_ns = quantile(std::max(0.0, 0.5 - half_width));
    cost.high_ns = quantile(std::min(1.0, 0.5 + half_width));
  }
  return out;
}

}  // namespace arenarpc::memory
