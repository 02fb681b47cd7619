// The two shapes a memory option's error takes (option_errors.h). In a file of their own: the
// page allocators use them, and the fuzz build links those without the rest of the options.
#include "memory/option_errors.h"

#include <stdexcept>
#include <utility>

namespace arenarpc::memory {

int ReportError(std::string text, std::string* error) {
  if (text.empty()) return 0;
  if (error != nullptr) *error = std::move(text);
  return -1;
}

void ThrowIfInvalid(const std::string& text) {
  if (!text.empty()) throw std::invalid_argument(text);
}

}  // namespace arenarpc::memory
