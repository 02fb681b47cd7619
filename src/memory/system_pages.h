#pragma once
// Raw page memory from the system allocator (internal to the memory layer).
#include <cstddef>

namespace arenarpc::memory {

// Cache-line alignment: enough for any protobuf block and avoids false sharing between pages,
// without the per-allocation overhead that page-size alignment costs in glibc.
inline constexpr size_t kSystemPageAlignment = 64;

void* AllocateSystemPage(size_t page_size);  // throws std::bad_alloc
void FreeSystemPage(void* page, size_t page_size) noexcept;

}  // namespace arenarpc::memory
