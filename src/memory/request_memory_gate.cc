#include "memory/request_memory_gate.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <algorithm>
#include <limits>

namespace arenarpc::memory {

namespace {

constexpr uint64_t kAlwaysObserve = 16;  // the first calls of a method, then one in kObserveOneIn
constexpr uint64_t kObserveOneIn = 32;

std::string Bytes(uint64_t n) {
  if (n >= (10u << 20)) return std::to_string(n >> 20) + " MiB";
  if (n >= (10u << 10)) return std::to_string(n >> 10) + " KiB";
  return std::to_string(n) + " bytes";
}

// Up at once, down slowly: admission errs on the side of the larger calls seen.
void Learn(std::atomic<uint64_t>& mark, uint64_t value) noexcept {
  uint64_t seen = mark.load(std::memory_order_relaxed);
  const uint64_t next = value >= seen ? value : seen - (seen - value) / 32;
  if (next != seen) mark.compare_exchange_strong(seen, next, std::memory_order_relaxed);
}

}  // namespace

RequestMemoryGate::RequestMemoryGate(const google::protobuf::Descriptor& request,
                                     uint64_t max_request_memory)
    : estimator_(request),
      max_request_memory_(max_request_memory),
      scan_above_(max_request_memory == 0 ? std::numeric_limits<uint64_t>::max()
                                          : max_request_memory / kScanShare) {}

uint64_t RequestMemoryGate::Expected(uint64_t wire_size) const noexcept {
  const uint64_t learned = base_.load(std::memory_order_relaxed) +
                           wire_size * ratio_x16_.load(std::memory_order_relaxed) / 16;
  return std::min(learned, estimator_.UpperBound(wire_size) + base_.load(std::memory_order_relaxed));
}

RequestMemoryGate::Decision RequestMemoryGate::Admit(SerializedMessage& wire,
                                                     MessageMemoryBudget& budget,
                                                     MessageMemoryBudget::Charge* charge) const {
  Decision d;
  const uint64_t wire_size = wire.size();
  d.bytes = Expected(wire_size);
  if (estimator_.UpperBound(wire_size) > scan_above_) {
    const uint64_t estimate = estimator_.Estimate(wire.Read(), max_request_memory_);
    if (estimate > max_request_memory_) {
      budget.rejected_too_large.fetch_add(1, std::memory_order_relaxed);
      d.verdict = Verdict::kTooLarge;
      d.bytes = estimate;
      d.text = "The request of " + std::to_string(wire_size) + " bytes would hold more than " +
               Bytes(max_request_memory_) + " once parsed (about " + Bytes(estimate) +
               " counted before the scan stopped; many small sub-messages or strings), over the "
               "server's max_request_memory=" + std::to_string(max_request_memory_);
      return d;
    }
    d.bytes = std::max(d.bytes, estimate);
  }
  if (!budget.TryCharge(d.bytes, charge)) {
    budget.rejected_in_flight.fetch_add(1, std::memory_order_relaxed);
    d.verdict = Verdict::kOverBudget;
    d.text = "Reached server's max_inflight_message_memory=" + std::to_string(budget.limit()) +
             ": calls in flight hold about " + Bytes(budget.in_use()) + ", this one needs about " +
             Bytes(d.bytes);
  }
  return d;
}

RequestMemoryGate::Decision RequestMemoryGate::AdmitJson(std::string_view json) const {
  Decision d;
  if (max_request_memory_ == 0 || json.size() < kSmallJson) return d;
  d.bytes = estimator_.EstimateJson(json);
  if (d.bytes > max_request_memory_) {
    d.verdict = Verdict::kTooLarge;
    d.text = "The JSON body of " + std::to_string(json.size()) + " bytes would hold about " +
             Bytes(d.bytes) + " once converted (many small objects, elements or strings), over "
             "the server's max_request_memory=" + std::to_string(max_request_memory_);
  }
  return d;
}

uint64_t RequestMemoryGate::Observe(const MessagePair& pair, uint64_t wire_size) noexcept {
  const uint64_t n = observed_.fetch_add(1, std::memory_order_relaxed);
  uint64_t held;
  if (const std::optional<uint64_t> known = pair.held_bytes()) {
    held = *known;
  } else if (n < kAlwaysObserve || n % kObserveOneIn == 0) {
    held = pair.request()->SpaceUsedLong() + pair.response()->SpaceUsedLong();
  } else {
    return 0;
  }
  if (wire_size < kSmallWire) {
    Learn(base_, held);
  } else {
    Learn(ratio_x16_, held * 16 / wire_size);
  }
  return held;
}

}  // namespace arenarpc::memory
