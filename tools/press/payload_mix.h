#pragma once
// PayloadMix: echo requests of several payload_scales in one run (--payload_mix=10:90,0:10), in
// a fixed order that spreads each scale's share evenly over the calls (smooth weighted round
// robin: 90:10 sends a scale-0 call every tenth call, 1:1 alternates). Scale 0 is an empty
// payload (the smallest call the echo method takes).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace arenarpc::press {

struct PayloadShare {
  int scale = 0;        // 0..1000; 0 = empty payload
  uint32_t weight = 0;  // > 0
};

// Parses "SCALE:WEIGHT[,SCALE:WEIGHT...]" into `out`; "" when valid, else what is wrong.
std::string ParsePayloadMix(std::string_view text, std::vector<PayloadShare>* out);

// The scales of one period of calls, in sending order: the weights divided by their greatest
// common divisor, so the period is their sum (10:90,0:10 -> 10 calls, the tenth of scale 0).
std::vector<int> MixOrder(const std::vector<PayloadShare>& mix);

// "10:90,0:10" back from a mix (for reports).
std::string FormatPayloadMix(const std::vector<PayloadShare>& mix);

}  // namespace arenarpc::press
