#include "memory/reuse/cleared_tail.h"

#include <atomic>
#include <string>

namespace arenarpc::memory::cleared_tail {
namespace {

#ifdef ARENARPC_CLEARED_TAIL_BLOCKS
// Reads a field built through the public API and compares: live and cleared counts, capacity, which
// pointer sits where. Then moves a cleared element out and back in, and checks that the public API
// sees the result. Any mismatch (a differently built 3.21) keeps the per-element calls.
bool LayoutMatches() noexcept {
  try {
    google::protobuf::RepeatedPtrField<std::string> field;
    for (const char* s : {"live", "live too", "cleared"}) field.Add()->assign(s);
    const std::string* first = &field.Get(0);
    std::string* cleared = field.Mutable(2);
    field.RemoveLast();  // clears it and keeps it as the one cleared element
    detail::Tail t = detail::TailOf(field);
    if (t.elements == nullptr || t.allocated == nullptr || t.live != 2 || *t.allocated != 3 ||
        t.capacity != field.Capacity() || t.elements[0] != first || t.elements[2] != cleared) {
      return false;
    }
    std::string* out = static_cast<std::string*>(t.elements[2]);
    --*t.allocated;
    if (field.ClearedCount() != 0 || field.size() != 2) {
      delete out;
      return false;
    }
    t = detail::TailOf(field);
    t.elements[2] = out;
    ++*t.allocated;
    return field.ClearedCount() == 1 && field.Add() == cleared && cleared->empty();
  } catch (...) {
    return false;
  }
}
#endif

bool LayoutChecked() noexcept {
#ifdef ARENARPC_CLEARED_TAIL_BLOCKS
  static const bool matches = LayoutMatches();
  return matches;
#else
  return false;
#endif
}

}  // namespace

std::atomic<bool> detail::use_blocks{LayoutChecked()};

bool UseBlocksForTesting(bool use) noexcept {
  detail::use_blocks.store(use && LayoutChecked(), std::memory_order_relaxed);
  return BlocksAvailable();
}

}  // namespace arenarpc::memory::cleared_tail
