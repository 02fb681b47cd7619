#pragma once
// Random ComplexPayload generator with the workload's distributions (docs/benchmarks.md):
// result count U[0,10s); per result k=U[0,s) items and k result-level terms; per item U[0,10s)
// terms; each term U[0,2s) random bytes. Every draw is rng() % n.

#include <cstdint>

#include "echo/echo_payload.pb.h"

namespace arenarpc::example {

class PayloadGenerator {
 public:
  explicit PayloadGenerator(int payload_scale, uint64_t seed = 0x5eed);

  // Clears nothing: appends a freshly drawn payload into `out` (pass an empty message).
  void Fill(ComplexPayload* out);
  void Fill(EchoRequest* out) { Fill(out->mutable_payload()); }

  int payload_scale() const { return scale_; }

 private:
  uint64_t Next();                       // splitmix64
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : Next() % n; }
  void FillTerm(std::string* term);

  int scale_;
  uint64_t state_;
};

}  // namespace arenarpc::example
