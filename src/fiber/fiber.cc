#include "fiber/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <exception>
#include <new>

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
  // A TSan fiber per body: Main's frames never return, a reused one would keep them.
  tsan_fiber_ = sanitizer::CreateTsanFiber();
  context_ = boost::context::detail::make_fcontext(static_cast<char*>(stack_bottom_) + stack_size_,
                                                    stack_size_, &Fiber::Main);
}

void Fiber::Resume() {
  Fiber* const outer = current_fiber;
  current_fiber = this;
  void* fake_stack = nullptr;
  sanitizer::StartSwitch(&fake_stack, stack_bottom_, stack_size_);
  tsan_caller_ = sanitizer::CurrentTsanFiber();
  sanitizer::SwitchTsanFiber(tsan_fiber_);
  // Main receives `this` on the first jump; later jumps land in Suspend().
  context_ = boost::context::detail::jump_fcontext(context_, this).fctx;
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
  caller_ = boost::context::detail::jump_fcontext(caller_, nullptr).fctx;
  sanitizer::FinishSwitch(asan_fake_stack_, &caller_stack_bottom_, &caller_stack_size_);
}

void Fiber::Main(boost::context::detail::transfer_t from) {
  auto* self = static_cast<Fiber*>(from.data);
  self->caller_ = from.fctx;
  sanitizer::FinishSwitch(nullptr, &self->caller_stack_bottom_, &self->caller_stack_size_);
  try {
    self->entry_(self->arg_);
    self->DestroyLocals();
  } catch (...) {
    // As an exception escaping a handler on a plain thread would: nothing above can take it.
    std::terminate();
  }
  self->finished_ = true;
  sanitizer::StartSwitch(nullptr, self->caller_stack_bottom_, self->caller_stack_size_);
  sanitizer::SwitchTsanFiber(self->tsan_caller_);
  boost::context::detail::jump_fcontext(self->caller_, nullptr);  // never comes back
  std::terminate();
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
