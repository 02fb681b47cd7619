#pragma once
// Moving a RepeatedPtrField's cleared elements as one block. Internal to the memory engine.
//
// Protobuf's public API moves cleared elements one at a time (ReleaseCleared / AddCleared), and for
// RepeatedPtrField<std::string> those are out-of-line library calls: ~47,000 of them per echo call
// of the workload, a fifth of the reuse strategy's CPU. Protobuf 3.21 keeps a field's elements in
// one array, the live ones first and the cleared ones right after them, so the cleared tail can be
// copied out or appended with one memcpy. That needs the field's private representation: it is
// reached through the standard's explicit-instantiation access rule (no patched protobuf, no layout
// copied by hand), compiled only against protobuf 3.21, and checked once at run time against the
// public API. Everywhere else (another protobuf, a failed check) the same functions fall back to
// the per-element calls.

#include <google/protobuf/repeated_ptr_field.h>
#include <google/protobuf/stubs/common.h>

#include <atomic>
#include <cstring>
#include <span>

namespace arenarpc::memory::cleared_tail {

#if GOOGLE_PROTOBUF_VERSION >= 3021000 && GOOGLE_PROTOBUF_VERSION < 3022000
#define ARENARPC_CLEARED_TAIL_BLOCKS 1

namespace detail {
using Base = google::protobuf::internal::RepeatedPtrFieldBase;

// [temp.spec.general]: access is not checked on the names in an explicit instantiation, so the
// member pointers below may name Base's private members; each is handed out by a friend function
// found through its tag.
template <class Tag, auto Member>
struct Expose {
  friend constexpr auto MemberOf(Tag) { return Member; }
};
struct CurrentSize {
  friend constexpr auto MemberOf(CurrentSize);
};
struct TotalSize {
  friend constexpr auto MemberOf(TotalSize);
};
struct RepPtr {
  friend constexpr auto MemberOf(RepPtr);
};
struct AllocatedSize {
  friend constexpr auto MemberOf(AllocatedSize);
};
struct Elements {
  friend constexpr auto MemberOf(Elements);
};
template struct Expose<CurrentSize, &Base::current_size_>;
template struct Expose<TotalSize, &Base::total_size_>;
template struct Expose<RepPtr, &Base::rep_>;
template struct Expose<AllocatedSize, &Base::Rep::allocated_size>;
template struct Expose<Elements, &Base::Rep::elements>;

// RepeatedPtrField<T> derives privately from Base; a C-style cast may still name that base
// ([expr.cast]: the conversion is done as if the base class were accessible).
template <class T>
Base& BaseOf(google::protobuf::RepeatedPtrField<T>& field) noexcept {
  return *(Base*)(&field);  // NOLINT(google-readability-casting): see above
}

// The field's element array (null when it never held one) and its allocated-size counter.
struct Tail {
  void** elements = nullptr;
  int* allocated = nullptr;
  int live = 0;
  int capacity = 0;
};
template <class T>
Tail TailOf(google::protobuf::RepeatedPtrField<T>& field) noexcept {
  Base& base = BaseOf(field);
  Tail t;
  t.live = base.*MemberOf(CurrentSize{});
  t.capacity = base.*MemberOf(TotalSize{});
  auto* rep = base.*MemberOf(RepPtr{});
  if (rep != nullptr) {
    t.elements = rep->*MemberOf(Elements{});
    t.allocated = &(rep->*MemberOf(AllocatedSize{}));
  }
  return t;
}
}  // namespace detail
#endif

namespace detail {
// Set during static initialization from the run-time layout check (cleared_tail.cc); false until
// then, which only means the per-element calls.
extern std::atomic<bool> use_blocks;
}  // namespace detail

// Whether the block moves are in use (protobuf 3.21 and its layout passed the run-time check).
// Inline: it is asked for every field a walk visits.
inline bool BlocksAvailable() noexcept {
  return detail::use_blocks.load(std::memory_order_relaxed);
}
// Tests: switches between block moves (where available) and per-element calls; returns whether
// block moves are now in use. Not for use while other threads move elements.
bool UseBlocksForTesting(bool use) noexcept;

// Every element of `field`, live then cleared (empty when the block view is unavailable: callers
// use it only for hints, such as prefetching).
template <class T>
std::span<void* const> AllElements(google::protobuf::RepeatedPtrField<T>& field) noexcept {
#ifdef ARENARPC_CLEARED_TAIL_BLOCKS
  if (BlocksAvailable()) {
    const detail::Tail t = detail::TailOf(field);
    if (t.elements != nullptr) return {t.elements, static_cast<size_t>(*t.allocated)};
  }
#endif
  return {};
}

// Starts loading the field's element array for writing (its head: the count and the first
// elements), without reading anything of it. A hint: does nothing without the block view.
template <class T>
void PrefetchArray(google::protobuf::RepeatedPtrField<T>& field) noexcept {
#ifdef ARENARPC_CLEARED_TAIL_BLOCKS
  if (BlocksAvailable()) {
    auto* rep = detail::BaseOf(field).*MemberOf(detail::RepPtr{});
    if (rep != nullptr) __builtin_prefetch(rep, 1, 3);
  }
#endif
}

// field.ClearedCount(), read in place: for RepeatedPtrField<std::string> the public one is an
// out-of-line library call, made for every string field on every shaping and fit.
template <class T>
int ClearedCount(google::protobuf::RepeatedPtrField<T>& field) noexcept {
#ifdef ARENARPC_CLEARED_TAIL_BLOCKS
  if (BlocksAvailable()) {
    const detail::Tail t = detail::TailOf(field);
    return t.allocated != nullptr ? *t.allocated - t.live : 0;
  }
#endif
  return field.ClearedCount();
}

// Removes one of `field`'s cleared elements (ClearedCount() > 0; the last one where blocks are
// available) and returns it. The caller owns it, or, for a field on an arena, holds it (the arena
// owns it): protobuf's ReleaseCleared() is for heap fields only, so an arena field without the
// block view goes through Add() (which makes a cleared element live without allocating) and
// UnsafeArenaReleaseLast().
template <class T>
T* TakeLastCleared(google::protobuf::RepeatedPtrField<T>& field) noexcept {
#ifdef ARENARPC_CLEARED_TAIL_BLOCKS
  if (BlocksAvailable()) {
    detail::Tail t = detail::TailOf(field);
    return static_cast<T*>(t.elements[--*t.allocated]);
  }
#endif
  if (field.GetArena() != nullptr) {
    field.Add();
    return field.UnsafeArenaReleaseLast();
  }
  return field.ReleaseCleared();
}

// Moves all `field`'s cleared elements, in order, to `out` (exactly ClearedCount() slots); the
// caller owns (or, on an arena, holds) them afterwards.
template <class T>
void TakeAll(google::protobuf::RepeatedPtrField<T>& field, std::span<T*> out) noexcept {
#ifdef ARENARPC_CLEARED_TAIL_BLOCKS
  if (BlocksAvailable()) {
    detail::Tail t = detail::TailOf(field);
    if (out.empty()) return;
    std::memcpy(out.data(), t.elements + t.live, out.size() * sizeof(void*));
    *t.allocated -= static_cast<int>(out.size());
    return;
  }
#endif
  for (size_t i = out.size(); i > 0; --i) out[i - 1] = TakeLastCleared(field);
}

// Appends `items` (cleared; owned by the caller, or on the field's arena) after `field`'s cleared
// elements, in order; the field owns them afterwards. Throws std::bad_alloc (growing the field's
// array) with nothing moved.
template <class T>
void Append(google::protobuf::RepeatedPtrField<T>& field, std::span<T* const> items) {
  if (items.empty()) return;
#ifdef ARENARPC_CLEARED_TAIL_BLOCKS
  if (BlocksAvailable()) {
    const int n = static_cast<int>(items.size());
    detail::Tail t = detail::TailOf(field);
    const int allocated = t.allocated != nullptr ? *t.allocated : 0;
    if (t.capacity - allocated < n) {
      field.Reserve(allocated + n);  // keeps every allocated element
      t = detail::TailOf(field);
    }
    std::memcpy(t.elements + allocated, items.data(), items.size() * sizeof(void*));
    *t.allocated = allocated + n;
    return;
  }
#endif
  // One by one, after making room for all of them (AddCleared then cannot throw). AddCleared() is
  // for heap fields only: on an arena, an element added live and removed again ends up cleared.
  field.Reserve(field.size() + field.ClearedCount() + static_cast<int>(items.size()));
  for (T* item : items) {
    if (field.GetArena() != nullptr) {
      field.UnsafeArenaAddAllocated(item);
      field.RemoveLast();
    } else {
      field.AddCleared(item);
    }
  }
}

// Makes `field`'s live elements cleared, in place and in order, without clearing them: they keep
// their old bytes, which only code that overwrites every element it adds (a parse) may see. Where
// the block view is unavailable this is field.Clear(), which does clear them.
template <class T>
void ForgetLive(google::protobuf::RepeatedPtrField<T>& field) noexcept {
#ifdef ARENARPC_CLEARED_TAIL_BLOCKS
  if (BlocksAvailable()) {
    detail::Base& base = detail::BaseOf(field);
    base.*MemberOf(detail::CurrentSize{}) = 0;
    return;
  }
#endif
  field.Clear();
}

}  // namespace arenarpc::memory::cleared_tail
