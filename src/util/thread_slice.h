#pragma once
// A per-thread count of finished run slices: the fiber scheduler bumps it each time a fiber it ran
// on this thread suspends or finishes. Code that times a stretch of work with the thread's CPU
// clock (the "auto" memory strategy) keeps the figure only if the count did not move, i.e. no
// other fiber's work ran on the thread in between.
#include <cstdint>

namespace arenarpc::util {

uint64_t ThreadSliceCount() noexcept;
void EndThreadSlice() noexcept;

}  // namespace arenarpc::util
