#include "memory/free_memory_release.h"

#include <dlfcn.h>
#include <malloc.h>

#include <cstddef>

namespace arenarpc::memory {
namespace {

using ReleaseFn = void (*)();
using MallctlFn = int (*)(const char*, void*, size_t*, void*, size_t);

// Looked up once: the allocators present do not change while the process runs.
struct Allocators {
  ReleaseFn tcmalloc_flush_thread = nullptr;
  ReleaseFn tcmalloc_release = nullptr;
  MallctlFn jemalloc_mallctl = nullptr;
};

const Allocators& Found() noexcept {
  static const Allocators found = [] {
    Allocators a;
    // Empties the thread's cache and keeps its structures (MarkThreadIdle would free them too,
    // and the thread goes on serving).
    a.tcmalloc_flush_thread = reinterpret_cast<ReleaseFn>(
        dlsym(RTLD_DEFAULT, "MallocExtension_MarkThreadTemporarilyIdle"));
    a.tcmalloc_release =
        reinterpret_cast<ReleaseFn>(dlsym(RTLD_DEFAULT, "MallocExtension_ReleaseFreeMemory"));
    a.jemalloc_mallctl = reinterpret_cast<MallctlFn>(dlsym(RTLD_DEFAULT, "mallctl"));
    return a;
  }();
  return found;
}

}  // namespace

FreeMemoryRelease ReleaseFreeMemoryToSystem() noexcept {
  FreeMemoryRelease asked;
#if defined(__GLIBC__)
  malloc_trim(0);
  asked.glibc = true;
#endif
  const Allocators& a = Found();
  if (a.tcmalloc_release != nullptr) {
    if (a.tcmalloc_flush_thread != nullptr) {
      a.tcmalloc_flush_thread();
      asked.tcmalloc_thread_cache = true;
    }
    a.tcmalloc_release();
    asked.tcmalloc = true;
  }
  if (a.jemalloc_mallctl != nullptr) {
    // MALLCTL_ARENAS_ALL (4096): every arena's dirty and muzzy pages.
    asked.jemalloc = a.jemalloc_mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0) == 0;
  }
  return asked;
}

}  // namespace arenarpc::memory
