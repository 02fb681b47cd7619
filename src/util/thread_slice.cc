#include "util/thread_slice.h"

namespace arenarpc::util {
namespace {

thread_local uint64_t slices = 0;

}  // namespace

uint64_t ThreadSliceCount() noexcept { return slices; }
void EndThreadSlice() noexcept { ++slices; }

}  // namespace arenarpc::util
