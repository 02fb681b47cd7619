#include "echo/payload_generator.h"

#include <stdexcept>
#include <string>

namespace arenarpc::example {

PayloadGenerator::PayloadGenerator(int payload_scale, uint64_t seed)
    : scale_(payload_scale), state_(seed) {
  if (payload_scale <= 0) {
    throw std::invalid_argument("payload_scale must be > 0, got " + std::to_string(payload_scale));
  }
}

uint64_t PayloadGenerator::Next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void PayloadGenerator::FillTerm(std::string* term) {
  const size_t len = Below(2 * static_cast<uint64_t>(scale_));
  term->resize(len);
  for (size_t i = 0; i < len; i += 8) {
    uint64_t bits = Next();
    for (size_t j = i; j < len && j < i + 8; ++j, bits >>= 8) (*term)[j] = static_cast<char>(bits);
  }
}

void PayloadGenerator::Fill(ComplexPayload* out) {
  const uint64_t s = static_cast<uint64_t>(scale_);
  const uint64_t results = Below(10 * s);
  for (uint64_t r = 0; r < results; ++r) {
    Result* result = out->add_result();
    const uint64_t k = Below(s);
    for (uint64_t i = 0; i < k; ++i) {
      Item* item = result->add_item();
      const uint64_t terms = Below(10 * s);
      for (uint64_t t = 0; t < terms; ++t) FillTerm(item->add_term());
    }
    for (uint64_t i = 0; i < k; ++i) FillTerm(result->add_term());
  }
}

}  // namespace arenarpc::example
