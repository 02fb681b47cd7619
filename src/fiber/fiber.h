#pragma once
// Fiber: one user-space thread of execution on its own stack, switched to and from (Boost.Context's
// make_fcontext / jump_fcontext, the primitives under boost::context::fiber) by a dispatcher (Scheduler::RunSlice on whatever thread runs it). A Fiber object owns
// its stack for life (mmap'ed, with a PROT_NONE guard page below it) and is reused for one body
// after another (the Scheduler pools them).
//
// Switching: Resume() (dispatcher side) runs the fiber until it finishes or calls Suspend();
// Suspend() (fiber side) switches back and has `after(arg)` run by the dispatcher once the fiber is
// off its stack — the point where a waiter may publish itself as parked, so that whoever wakes it
// never resumes a fiber that is still running.

#include <boost/context/detail/fcontext.hpp>

#include <cstddef>
#include <vector>

namespace arenarpc::fiber {

class Scheduler;

class Fiber {
 public:
  using Entry = void (*)(void* arg);
  using After = void (*)(void* arg);

  // Maps stack_size bytes (rounded up to pages) plus a guard page. Throws std::bad_alloc.
  explicit Fiber(size_t stack_size);
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Dispatcher side. Start(): the next Resume() runs entry(arg) from the top.
  void Start(Scheduler* scheduler, Entry entry, void* arg);
  // Runs the fiber on this thread until it suspends or its entry returns. Then, if it suspended,
  // the caller must call RunAfterSuspend() (after which it may already run elsewhere).
  void Resume();
  bool finished() const noexcept { return finished_; }
  void RunAfterSuspend() { after_(after_arg_); }

  // Fiber side: back to the dispatcher; returns when someone resumes this fiber again.
  void Suspend(After after, void* arg);

  Scheduler* scheduler() const noexcept { return scheduler_; }
  size_t stack_size() const noexcept { return stack_size_; }

  // Fiber-local values (fiber::FiberLocal), destroyed when the entry returns.
  struct Local {
    const void* key;
    void* value;
    void (*destroy)(void*);
  };
  std::vector<Local>& locals() noexcept { return locals_; }

 private:
  using Context = boost::context::detail::fcontext_t;
  // The fiber's first frame. Never returns: the last switch leaves the stack for good, so every
  // switch (the last one too) happens between two jump_fcontext calls — what TSan's per-fiber
  // shadow call stacks need to stay balanced.
  [[noreturn]] static void Main(boost::context::detail::transfer_t from);
  void DestroyLocals();

  void* mapping_ = nullptr;   // guard page + stack
  size_t mapping_size_ = 0;
  void* stack_bottom_ = nullptr;  // lowest usable address
  size_t stack_size_ = 0;

  Scheduler* scheduler_ = nullptr;
  Entry entry_ = nullptr;
  void* arg_ = nullptr;
  bool finished_ = false;
  After after_ = nullptr;
  void* after_arg_ = nullptr;
  Context context_ = nullptr;  // this fiber, while it does not run
  Context caller_ = nullptr;   // the dispatcher, while this fiber runs
  std::vector<Local> locals_;

  // Sanitizer bookkeeping (unused without ASan/TSan).
  void* asan_fake_stack_ = nullptr;
  const void* caller_stack_bottom_ = nullptr;
  size_t caller_stack_size_ = 0;
  void* tsan_fiber_ = nullptr;
  void* tsan_caller_ = nullptr;
};

// The fiber running on this thread, or nullptr. Not inlined: a fiber may continue on another
// thread after a switch, so the thread-local must be read afresh every time.
Fiber* CurrentFiber() noexcept;

}  // namespace arenarpc::fiber
