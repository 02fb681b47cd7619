#pragma once
// ReleaseFreeMemoryToSystem: asks the process's malloc to return the pages it holds free to the
// system, so that memory a strategy gave back (MessageMemory::Trim()) leaves the RSS instead of
// waiting in malloc's caches. glibc's malloc_trim(0); and, where another allocator is preloaded
// or linked, its own call found by name at run time (no link dependency): gperftools tcmalloc's
// MallocExtension_ReleaseFreeMemory, jemalloc's mallctl("arena.<all>.purge").
//
// Costs one walk of the allocator's free lists and the system calls to unmap: call it on rare
// events (auto settling), never per call.

namespace arenarpc::memory {

// Which allocators were asked (for the caller's tests and logs).
struct FreeMemoryRelease {
  bool glibc = false;
  bool tcmalloc = false;
  bool jemalloc = false;
};

FreeMemoryRelease ReleaseFreeMemoryToSystem() noexcept;

}  // namespace arenarpc::memory
