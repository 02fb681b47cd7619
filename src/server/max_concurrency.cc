#include "arenarpc/max_concurrency.h"

#include <charconv>

namespace arenarpc {

MaxConcurrency::MaxConcurrency(std::string_view spec) : spec_(spec) {
  if (spec == "auto") {
    auto_ = true;
    return;
  }
  if (spec == "unlimited") return;
  const char* end = spec.data() + spec.size();
  const auto [ptr, ec] = std::from_chars(spec.data(), end, limit_);
  if (spec.empty() || ec != std::errc() || ptr != end) {
    limit_ = 0;
    error_ = "expected a number >= 0 (0 = unlimited), \"unlimited\" or \"auto\"";
  }
}

}  // namespace arenarpc
