#pragma once
// Raw page memory from the system allocator (internal to the memory layer).
#include <cstddef>

namespace arenarpc::memory {

// Pages have operator new's alignment (16 bytes with glibc; page-sized size classes are aligned
// further by jemalloc and tcmalloc): enough for any protobuf block.
void* AllocateSystemPage(size_t page_size);  // throws std::bad_alloc
void FreeSystemPage(void* page, size_t page_size) noexcept;

}  // namespace arenarpc::memory
