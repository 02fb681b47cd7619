#include "stats/error_counts.h"

#include "arenarpc/error_codes.h"

namespace arenarpc::stats {

static_assert(ENOSERVICE == 1001 && ENOMETHOD == 1002 && EREQUEST == 1003 && ERPCAUTH == 1004 &&
              ERPCTIMEDOUT == 1008 && EFAILEDSOCKET == 1009 && EOVERCROWDED == 1011 &&
              EEOF == 1014 && EREJECT == 1018 && EINTERNAL == 2001 && ERESPONSE == 2002 &&
              ELOGOFF == 2003 && ELIMIT == 2004 && ECLOSE == 2005,
              "ErrorCounts::kCodes follows error_codes.h");

std::vector<std::pair<int, uint64_t>> ErrorCounts::NonZero() const {
  std::vector<std::pair<int, uint64_t>> out;
  for (size_t i = 0; i < counts_.size(); ++i) {
    const uint64_t n = counts_[i].load(std::memory_order_relaxed);
    if (n != 0) out.emplace_back(i < kCodes.size() ? kCodes[i] : kOtherCode, n);
  }
  return out;
}

}  // namespace arenarpc::stats
