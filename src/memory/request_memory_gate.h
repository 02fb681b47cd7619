#pragma once
// RequestMemoryGate: one method's admission of a request by the memory its messages will hold,
// before the request is parsed (docs/server.md, "Message memory").
//
//   - A request whose parse could hold more than max_request_memory / kScanShare (its wire size
//     times the type's worst bytes per wire byte) is scanned (RequestMemoryEstimator); over
//     max_request_memory it is refused (EREQUEST).
//   - Every admitted call charges the server's MessageMemoryBudget what it is expected to hold:
//     the learned held bytes for its wire size (at least the scan's estimate when scanned); a
//     call that would pass max_inflight_message_memory is refused (ELIMIT).
//   - After calls, the method learns what its calls hold (MessagePair::held_bytes(): the arena's
//     SpaceAllocated, reuse's per-object estimates; else SpaceUsedLong, sampled) as a base plus
//     bytes per wire byte.

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "arenarpc/memory/message_memory.h"
#include "memory/message_memory_budget.h"
#include "memory/request_memory_estimate.h"

namespace arenarpc::memory {

class RequestMemoryGate {
 public:
  static constexpr uint64_t kScanShare = 16;

  // max_request_memory 0: no bound per request (calls are still charged to the budget).
  RequestMemoryGate(const google::protobuf::Descriptor& request, uint64_t max_request_memory);

  enum class Verdict { kAdmitted, kTooLarge, kOverBudget };
  struct Decision {
    Verdict verdict = Verdict::kAdmitted;
    uint64_t bytes = 0;  // the estimate (kTooLarge) or the charge asked for
    std::string text;    // why, for the error reply (not kAdmitted)
  };

  // `wire`: the request's bytes, about to be parsed. Admitted: *charge holds the call's share of
  // the budget until the call's messages are released.
  Decision Admit(SerializedMessage& wire, MessageMemoryBudget& budget,
                 MessageMemoryBudget::Charge* charge) const;
  // A JSON body, before it is converted: kTooLarge or kAdmitted (nothing charged).
  Decision AdmitJson(std::string_view json) const;

  // A call of `wire_size` request bytes ended holding what `pair` holds now.
  // Returns the bytes it measured the call's messages to hold, or 0 when it did not look.
  uint64_t Observe(const MessagePair& pair, uint64_t wire_size) noexcept;

  // What a call of `wire_size` bytes is expected to hold.
  uint64_t Expected(uint64_t wire_size) const noexcept;
  uint64_t max_request_memory() const noexcept { return max_request_memory_; }

 private:
  static constexpr uint64_t kSmallWire = 1024;  // calls below it teach the base, above the ratio
  static constexpr uint64_t kSmallJson = 64u << 10;  // JSON bodies below it are not scanned
  const RequestMemoryEstimator estimator_;
  const uint64_t max_request_memory_;
  const uint64_t scan_above_;
  std::atomic<uint64_t> base_{4096};          // bytes held by a small call
  std::atomic<uint64_t> ratio_x16_{4 * 16};   // held bytes per wire byte, times 16
  std::atomic<uint64_t> observed_{0};
};

}  // namespace arenarpc::memory
