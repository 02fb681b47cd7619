#include "memory/trial_comparison.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace arenarpc::memory {
namespace {

// A call does some work whatever its size: the model never charges less than this many bytes'
// worth, so an empty call does not scale to infinity.
constexpr double kFloorBytes = 64;

// Calls a turn needs for its figure to count in the spread between turns (a turn cut short as the
// trial ended is mostly noise).
constexpr uint64_t kTurnCalls = 4;

// Two-sided 95 % quantile of Student's t with `df` degrees of freedom.
double Student95(size_t df) {
  static constexpr double kTable[] = {12.71, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                      2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131};
  if (df == 0) return 0;
  return df <= std::size(kTable) ? kTable[df - 1] : 2.0;
}

// Half-width of the ~95 % interval of `values`' mean, relative to that mean (0 if fewer than 2).
double RelativeHalfWidth(const std::vector<double>& values) {
  const size_t k = values.size();
  if (k < 2) return 0;
  double mean = 0;
  for (double v : values) mean += v;
  mean /= static_cast<double>(k);
  double squares = 0;
  for (double v : values) squares += (v - mean) * (v - mean);
  const double sd = std::sqrt(squares / static_cast<double>(k - 1));
  return mean > 0 ? Student95(k - 1) * sd / std::sqrt(static_cast<double>(k)) / mean : 0;
}

struct Turn {
  double cpu = 0, work = 0, bytes = 0;
  uint64_t calls = 0;
};

bool ComparableSize(double mean_bytes, double reference_bytes) {
  const double ratio = (mean_bytes + kSmallCallBytes) / (reference_bytes + kSmallCallBytes);
  return ratio <= kComparableRatio && ratio * kComparableRatio >= 1;
}

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
  const auto work_of = [&](const TrialSample& s) {
    return out.per_byte_ns > 0 ? model(static_cast<double>(s.wire_bytes)) : 1.0;
  };

  // Each candidate's turns, and each round's level: the geometric mean of the figures of the
  // candidates that served a full enough turn in it, when two or more did.
  std::vector<std::map<uint32_t, Turn>> turns(samples.size());
  for (size_t c = 0; c < samples.size(); ++c) {
    for (const TrialSample& s : samples[c]) {
      Turn& t = turns[c][s.round];
      t.cpu += static_cast<double>(s.cpu_ns);
      t.work += work_of(s);
      t.bytes += static_cast<double>(s.wire_bytes);
      ++t.calls;
    }
  }
  // A turn long enough to tell, on calls of the trial's size (a turn that got a burst of tiny
  // calls says nothing of the load its round ran under).
  const auto counts = [&](const Turn& t) {
    return t.calls >= kTurnCalls && t.cpu > 0 &&
           ComparableSize(t.bytes / static_cast<double>(t.calls), out.reference_bytes);
  };
  std::map<uint32_t, std::pair<double, uint32_t>> levels;  // round -> (sum of logs, candidates)
  for (const auto& of_candidate : turns) {
    for (const auto& [round, t] : of_candidate) {
      if (!counts(t)) continue;
      auto& level = levels[round];
      level.first += std::log(t.cpu / t.work);
      ++level.second;
    }
  }

  for (size_t c = 0; c < samples.size(); ++c) {
    CandidateCost& cost = out.candidates[c];
    const auto& calls = samples[c];
    cost.samples = calls.size();
    if (calls.empty()) continue;
    cost.mean_bytes = means[c].bytes;
    cost.comparable = ComparableSize(cost.mean_bytes, out.reference_bytes);

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
      work += work_of(s);
    }
    const double per_work = cpu / work;
    const double n = static_cast<double>(calls.size());
    // ~95 % interval of that ratio (delta method): the spread of the calls' residuals from it.
    double residuals = 0;
    for (const TrialSample& s : calls) {
      const double r = static_cast<double>(s.cpu_ns) - per_work * work_of(s);
      residuals += r * r;
    }
    const double mean_work = work / n;
    double half_width =
        n > 1 ? 1.96 * std::sqrt(residuals / (n - 1) / n) / mean_work : per_work;
    // The spread between its turns, relative to their rounds' levels where other candidates
    // served next to it, else as they are: no narrower than that.
    std::vector<double> paired, unpaired;
    for (const auto& [round, t] : turns[c]) {
      if (!counts(t)) continue;
      const double figure = t.cpu / t.work;
      unpaired.push_back(figure);
      const auto& [logs, count] = levels[round];
      if (count >= 2) paired.push_back(figure / std::exp(logs / count));
    }
    const double between_turns =
        RelativeHalfWidth(paired.size() >= 2 ? paired : unpaired) * per_work;
    half_width = std::max(half_width, between_turns);
    const double scale = out.per_byte_ns > 0 ? at_reference : 1;
    cost.cpu_ns = per_work * scale;
    cost.low_ns = std::max(0.0, per_work - half_width) * scale;
    cost.high_ns = (per_work + half_width) * scale;
  }
  return out;
}

}  // namespace arenarpc::memory
