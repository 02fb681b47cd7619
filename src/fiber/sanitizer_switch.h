#pragma once
// Tells AddressSanitizer and ThreadSanitizer about every stack switch (Boost.Context's fcontext
// switches, which Debian's Boost 1.74 annotates for neither). Compiled to nothing without them.
//
// ASan: StartSwitch() right before a switch names the stack being entered; FinishSwitch() right
// after arriving reports the stack that was left (a fiber learns its dispatcher's stack so). A
// context leaving for good passes a null fake-stack slot so ASan frees its fake frames.
// TSan: every fiber is a TSan fiber; SwitchTsanFiber() immediately before each switch. These are
// always inlined: an instrumented wrapper would enter in one TSan fiber and return in the other,
// unbalancing both shadow call stacks.

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define ARENARPC_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARENARPC_FIBER_ASAN 1
#endif
#endif
// The build undefines __SANITIZE_THREAD__ for protobuf's headers (see CMakeLists.txt).
#if defined(__SANITIZE_THREAD__) || defined(ARENARPC_SANITIZE_THREAD)
#define ARENARPC_FIBER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ARENARPC_FIBER_TSAN 1
#endif
#endif

#if defined(ARENARPC_FIBER_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(ARENARPC_FIBER_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

namespace arenarpc::fiber::sanitizer {

#define ARENARPC_FIBER_INLINE inline __attribute__((always_inline))

ARENARPC_FIBER_INLINE void StartSwitch([[maybe_unused]] void** fake_stack_save,
                        [[maybe_unused]] const void* bottom, [[maybe_unused]] size_t size) {
#if defined(ARENARPC_FIBER_ASAN)
  __sanitizer_start_switch_fiber(fake_stack_save, bottom, size);
#endif
}

ARENARPC_FIBER_INLINE void FinishSwitch([[maybe_unused]] void* fake_stack_save,
                         [[maybe_unused]] const void** bottom_old,
                         [[maybe_unused]] size_t* size_old) {
#if defined(ARENARPC_FIBER_ASAN)
  __sanitizer_finish_switch_fiber(fake_stack_save, bottom_old, size_old);
#endif
}

// A pooled stack is handed to a new fiber: no poisoning left by the previous one's frames.
ARENARPC_FIBER_INLINE void UnpoisonStack([[maybe_unused]] const void* bottom, [[maybe_unused]] size_t size) {
#if defined(ARENARPC_FIBER_ASAN)
  __asan_unpoison_memory_region(bottom, size);
#endif
}

ARENARPC_FIBER_INLINE void* CreateTsanFiber() {
#if defined(ARENARPC_FIBER_TSAN)
  return __tsan_create_fiber(0);
#else
  return nullptr;
#endif
}

ARENARPC_FIBER_INLINE void DestroyTsanFiber([[maybe_unused]] void* fiber) {
#if defined(ARENARPC_FIBER_TSAN)
  __tsan_destroy_fiber(fiber);
#endif
}

ARENARPC_FIBER_INLINE void* CurrentTsanFiber() {
#if defined(ARENARPC_FIBER_TSAN)
  return __tsan_get_current_fiber();
#else
  return nullptr;
#endif
}

ARENARPC_FIBER_INLINE void SwitchTsanFiber([[maybe_unused]] void* fiber) {
#if defined(ARENARPC_FIBER_TSAN)
  __tsan_switch_to_fiber(fiber, 0);  // flags 0: the switch orders memory, as the hand-off does
#endif
}

#undef ARENARPC_FIBER_INLINE

}  // namespace arenarpc::fiber::sanitizer
