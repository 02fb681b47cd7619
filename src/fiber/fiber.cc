#include "fiber/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <exception>
#include <new>
#include <utility>

#include "fiber/sanitizer_switch.h"

namespace arenarpc::fiber {
namespace {

thread_local Fiber* current_fiber = nullptr;

size_t PageSize() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

}  // namespace

Fiber* CurrentFiber() noexcept {
  // A compiler barrier: the thread-local's address is not carried across a switch.
  asm volatile("" ::: "memory");
  return current_fiber;
}

struct Fiber::OwnStack {
  boost::context::stack_context context;
  boost::context::stack_context allocate() const noexcept { return context; }
  void deallocate(boost::context::stack_context&) const noexcept {}  // the Fiber keeps it
};

Fiber::Fiber(size_t stack_size) {
  const size_t page = PageSize();
  stack_size_ = (stack_size + page - 1) / page * page;
  mapping_size_ = stack_size_ + page;
  mapping_ = mmap(nullptr, mapping_size_, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (mapping_ == MAP_FAILED) throw std::bad_alloc();
  // Stacks grow down: an overflow runs into the guard page and faults instead of corrupting.
  if (mprotect(mapping_, page, PROT_NONE) != 0) {
    munmap(mapping_, mapping_size_);
    throw std::bad_alloc();
  }
  stack_bottom_ = static_cast<char*>(mapping_) + page;
}

Fiber::~Fiber() {
  if (tsan_fiber_ != nullptr) sanitizer::DestroyTsanFiber(tsan_fiber_);
  munmap(mapping_, mapping_size_);
}

void Fiber::Start(Scheduler* scheduler, Entry entry, void* arg) {
  scheduler_ = scheduler;
  entry_ = entry;
  arg_ = arg;
  finished_ = false;
  sanitizer::UnpoisonStack(stack_bottom_, stack_size_);
  boost::context::stack_context stack;
  stack.size = stack_size_;
  stack.sp = static_cast<char*>(stack_bottom_) + stack_size_;
  // A TSan fiber per body: Boost's entry frame never returns (it jumps away), so a reused one
  // would keep one stale frame per body. Constructing the Boost fiber already runs its entry
  // frame on the new stack: under that TSan fiber too.
  tsan_fiber_ = sanitizer::CreateTsanFiber();
  void* const tsan_caller = sanitizer::CurrentTsanFiber();
  sanitizer::SwitchTsanFiber(tsan_fiber_);
  context_ = boost::context::fiber(
      std::allocator_arg, OwnStack{stack},
      [this](boost::context::fiber&& caller) { return Main(std::move(caller)); });
  sanitizer::SwitchTsanFiber(tsan_caller);
}

void Fiber::Resume() {
  Fiber* const outer = current_fiber;
  current_fiber = this;
  void* fake_stack = nullptr;
  sanitizer::StartSwitch(&fake_stack, stack_bottom_, stack_size_);
  tsan_caller_ = sanitizer::CurrentTsanFiber();
  sanitizer::SwitchTsanFiber(tsan_fiber_);
  context_ = std::move(context_).resume();
  sanitizer::FinishSwitch(fake_stack, nullptr, nullptr);
  current_fiber = outer;
  if (finished_ && tsan_fiber_ != nullptr) {
    sanitizer::DestroyTsanFiber(tsan_fiber_);
    tsan_fiber_ = nullptr;
  }
}

void Fiber::Suspend(After after, void* arg) {
  after_ = after;
  after_arg_ = arg;
  sanitizer::StartSwitch(&asan_fake_stack_, caller_stack_bottom_, caller_stack_size_);
  sanitizer::SwitchTsanFiber(tsan_caller_);
  caller_ = std::move(caller_).resume();
  sanitizer::FinishSwitch(asan_fake_stack_, &caller_stack_bottom_, &caller_stack_size_);
}

boost::context::fiber Fiber::Main(boost::context::fiber&& caller) {
  caller_ = std::move(caller);
  sanitizer::FinishSwitch(nullptr, &caller_stack_bottom_, &caller_stack_size_);
  try {
    entry_(arg_);
  } catch (const boost::context::detail::forced_unwind&) {
    throw;  // Boost.Context unwinding a fiber destroyed while suspended
  } catch (...) {
    // As an exception escaping a handler on a plain thread would: nothing above can take it.
    std::terminate();
  }
  DestroyLocals();
  finished_ = true;
  sanitizer::StartSwitch(nullptr, caller_stack_bottom_, caller_stack_size_);  // leaving for good
  sanitizer::SwitchTsanFiber(tsan_caller_);
  return std::move(caller_);
}

void Fiber::DestroyLocals() {
  // A destructor may create another local: take them out first.
  while (!locals_.empty()) {
    std::vector<Local> locals;
    locals.swap(locals_);
    for (const Local& local : locals) local.destroy(local.value);
  }
}

}  // namespace arenarpc::fiber
