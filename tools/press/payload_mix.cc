#include "press/payload_mix.h"

#include <charconv>
#include <numeric>

namespace arenarpc::press {
namespace {

constexpr int kMaxScale = 1000;
constexpr uint64_t kMaxPeriod = 100000;  // calls in one period of the order

template <typename T>
bool ParseNumber(std::string_view text, T* out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

}  // namespace

std::string ParsePayloadMix(std::string_view text, std::vector<PayloadShare>* out) {
  out->clear();
  uint64_t total = 0;
  while (true) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const size_t colon = item.find(':');
    PayloadShare share;
    if (colon == std::string_view::npos || !ParseNumber(item.substr(0, colon), &share.scale) ||
        !ParseNumber(item.substr(colon + 1), &share.weight)) {
      return "--payload_mix: '" + std::string(item) +
             "' is not SCALE:WEIGHT (e.g. --payload_mix=10:90,0:10)";
    }
    if (share.scale < 0 || share.scale > kMaxScale) {
      return "--payload_mix: scale " + std::to_string(share.scale) + " is not in 0.." +
             std::to_string(kMaxScale);
    }
    if (share.weight == 0) return "--payload_mix: weight of scale " +
                                  std::to_string(share.scale) + " must be > 0";
    total += share.weight;
    out->push_back(share);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  uint32_t divisor = 0;
  for (const PayloadShare& share : *out) divisor = std::gcd(divisor, share.weight);
  if (total / divisor > kMaxPeriod) {
    return "--payload_mix: the weights' period (their sum over their gcd) must be <= " +
           std::to_string(kMaxPeriod);
  }
  return "";
}

std::vector<int> MixOrder(const std::vector<PayloadShare>& mix) {
  uint32_t divisor = 0;
  for (const PayloadShare& share : mix) divisor = std::gcd(divisor, share.weight);
  int64_t period = 0;
  for (const PayloadShare& share : mix) period += share.weight / divisor;
  // Smooth weighted round robin: each step every share gains its weight, the richest is sent and
  // pays the period.
  std::vector<int64_t> credit(mix.size(), 0);
  std::vector<int> order;
  order.reserve(static_cast<size_t>(period));
  for (int64_t call = 0; call < period; ++call) {
    size_t richest = 0;
    for (size_t i = 0; i < mix.size(); ++i) {
      credit[i] += mix[i].weight / divisor;
      if (credit[i] > credit[richest]) richest = i;
    }
    credit[richest] -= period;
    order.push_back(mix[richest].scale);
  }
  return order;
}

std::string FormatPayloadMix(const std::vector<PayloadShare>& mix) {
  std::string text;
  for (const PayloadShare& share : mix) {
    if (!text.empty()) text += ',';
    text += std::to_string(share.scale) + ':' + std::to_string(share.weight);
  }
  return text;
}

}  // namespace arenarpc::press
