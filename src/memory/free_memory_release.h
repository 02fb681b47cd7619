#pragma once
// ReleaseFreeMemoryToSystem: asks the process's malloc to return the pages it holds free to the
// system, so that memory a strategy gave back (MessageMemory::Trim()) leaves the RSS instead of
// waiting in malloc's caches. glibc's malloc_trim(0); and, where another allocator is preloaded
// or linked, its own calls found by name at run time (no link dependency):
// - gperftools tcmalloc: MallocExtension_MarkThreadTemporarilyIdle, then
//   MallocExtension_ReleaseFreeMemory. A freed object first goes to the freeing thread's cache
//   (up to a few MiB per thread), where no release call reaches it: only once back in the central
//   free lists can its span, when all of the span's objects are free, go to the page heap that
//   ReleaseFreeMemory returns. So the calling thread's cache is flushed first (the thread that
//   just trimmed a strategy holds what it freed); other threads' caches are not reachable.
// - jemalloc: mallctl("arena.<all>.purge").
//
// Costs one walk of the allocator's free lists and the system calls to unmap: call it on rare
// events (auto settling), never per call.

namespace arenarpc::memory {

// Which allocators were asked (for the caller's tests and logs).
struct FreeMemoryRelease {
  bool glibc = false;
  bool tcmalloc = false;
  bool tcmalloc_thread_cache = false;  // the calling thread's cache was flushed first
  bool jemalloc = false;
};

FreeMemoryRelease ReleaseFreeMemoryToSystem() noexcept;

}  // namespace arenarpc::memory
