#pragma once
// SpareElements: cleared repeated-field elements (sub-messages and strings) owned by a reused
// object but attached to no field, so that ShapePlan can move them to whichever position the next
// request needs them at. Kept per pooled object; not thread-safe (one call at a time owns it).
//
// Spares are handed out first in, first out. Before fitting a message, the fitter gathers the
// message's cleared elements into the spares in the order in which the fitting takes them back
// (moves::Gather in element_moves.h), ahead of the spares left unused. So an
// element keeps its place in the object's traversal order from call to call: a request walks its
// strings in the order they were allocated (mostly ascending addresses, which the hardware
// prefetches) instead of in an order that every differently shaped request reshuffles.

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace google::protobuf {
class Descriptor;
class Message;
}  // namespace google::protobuf

namespace arenarpc::memory {

// A small dense number per message type, the same for the whole process (so that every user of
// an object's spares agrees on it). Takes a lock: call it when building plans, not per call.
size_t SpareTypeId(const google::protobuf::Descriptor& type);

// One FIFO of owned, cleared elements of one type.
template <class T>
class SpareQueue {
 public:
  SpareQueue() = default;
  ~SpareQueue() { Clear(); }
  SpareQueue(SpareQueue&& other) noexcept
      : items_(std::move(other.items_)),
        head_(other.head_),
        filled_(other.filled_),
        spill_(other.spill_),
        on_arena_(other.on_arena_) {
    other.items_.clear();
    other.head_ = other.filled_ = other.spill_ = 0;
  }
  SpareQueue& operator=(SpareQueue&&) = delete;
  SpareQueue(const SpareQueue&) = delete;
  SpareQueue& operator=(const SpareQueue&) = delete;

  size_t size() const noexcept { return items_.size() - head_; }
  // What Take() would return after `ahead` other takes (Peek(0): the next one), or nullptr.
  T* Peek(size_t ahead) const noexcept {
    return head_ + ahead < items_.size() ? items_[head_ + ahead] : nullptr;
  }

  T* Take() noexcept {
    if (head_ == items_.size()) return nullptr;
    // Spares have been cold since the last call; a fitter takes them in queue order and works on
    // each at once, so start loading one a few places ahead (its miss overlaps the work between).
    if (head_ + kLookahead < items_.size()) __builtin_prefetch(items_[head_ + kLookahead], 1, 3);
    T* item = items_[head_++];
    if (head_ == items_.size()) Reset();
    return item;
  }

  void Put(T* item) {  // takes ownership; drops `item` if it cannot be stored
    try {
      if (head_ > 0 && items_.size() == items_.capacity()) Compact();
      items_.push_back(item);
    } catch (...) {
      Free(item);
      throw;
    }
  }
  // The elements live on their object's arena: the queue holds them but never deletes them.
  void SetOnArena() noexcept { on_arena_ = true; }

  // Between BeginGather() and EndGather(): reserves `n` slots for gathered elements, in gather
  // order, and returns the index of the first; the caller fills every one of them (slot()) with an
  // owned element before anything else is taken or put. Throws std::bad_alloc, leaving the queue
  // as it was. Slots come from the prefix that takes have emptied while it has room (a gather
  // usually returns what the last fit took, so nothing else moves), then from the back.
  size_t Extend(size_t n) {
    // Once one spilled, the rest follow it, or gather order is lost.
    if (items_.size() == spill_ && filled_ + n <= head_) {
      const size_t first = filled_;
      filled_ += n;
      return first;
    }
    const size_t first = items_.size();
    items_.resize(first + n, nullptr);
    return first;
  }
  T*& slot(size_t index) noexcept { return items_[index]; }
  std::span<T*> slots(size_t first, size_t n) noexcept { return {items_.data() + first, n}; }

  // The first min(n, size()) elements, still owned by the queue until Drop()ped.
  std::span<T* const> Front(size_t n) const noexcept {
    return {items_.data() + head_, std::min(n, size())};
  }
  // Gives up ownership of the first n elements (n <= size()): the caller took them (Front()).
  void Drop(size_t n) noexcept {
    head_ += n;
    if (head_ == items_.size()) Reset();
  }

  // Gathered elements (Extend after BeginGather) queue in front of the unused ones.
  void BeginGather() noexcept {
    filled_ = 0;
    spill_ = items_.size();
  }
  void EndGather() noexcept {
    // Now: [gathered in the taken prefix | rest of the prefix | unused | gathered at the back].
    const size_t unused = spill_ - head_;
    const size_t spilled = items_.size() - spill_;
    if (unused > 0 && spilled > 0) RotateToFront(head_, unused, spilled);
    // [gathered | gap | gathered | unused]: close the gap by moving the first part up to head_.
    if (filled_ > 0 && filled_ < head_) {
      std::memmove(items_.data() + head_ - filled_, items_.data(), filled_ * sizeof(T*));
    }
    head_ -= filled_;
    filled_ = spill_ = 0;
  }

  template <class F>
  void ForEach(F&& f) const {
    for (size_t i = head_; i < items_.size(); ++i) f(*items_[i]);
  }
  size_t capacity_bytes() const noexcept { return items_.capacity() * sizeof(T*); }

  void Clear() noexcept {
    for (size_t i = head_; i < items_.size(); ++i) Free(items_[i]);
    Reset();
  }

 private:
  // From `first`: [unused | gathered] -> [gathered | unused] with three block copies through a
  // per-thread buffer (std::rotate swaps element by element; a buffer per queue would cost every
  // pooled object).
  void RotateToFront(size_t first, size_t unused, size_t gathered) noexcept {
    thread_local std::vector<T*> buffer;
    T** items = items_.data() + first;
    try {
      buffer.resize(unused);
    } catch (...) {
      std::rotate(items, items + unused, items + unused + gathered);
      return;
    }
    std::memcpy(buffer.data(), items, unused * sizeof(T*));
    std::memmove(items, items + unused, gathered * sizeof(T*));
    std::memcpy(items + gathered, buffer.data(), unused * sizeof(T*));
  }

  void Free(T* item) noexcept {
    if (!on_arena_) delete item;
  }
  void Compact() noexcept {  // drops the taken prefix (erase only moves pointers)
    items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
  void Reset() noexcept {  // no elements left
    items_.clear();
    head_ = 0;
  }

  static constexpr size_t kLookahead = 8;
  std::vector<T*> items_;  // [head_, end) are owned
  size_t head_ = 0;
  // Between BeginGather and EndGather: gathered elements fill [0, filled_) of the taken prefix,
  // then, once one does not fit, queue from spill_ (the end when the gather began).
  size_t filled_ = 0;
  size_t spill_ = 0;
  bool on_arena_ = false;
};

class SpareElements {
 public:
  SpareElements() = default;
  ~SpareElements() = default;
  SpareElements(const SpareElements&) = delete;
  SpareElements& operator=(const SpareElements&) = delete;

  // The object the spares came from lives on an arena: they are held, never deleted.
  void SetOnArena() noexcept;
  bool on_arena() const noexcept { return on_arena_; }

  // Messages are kept per element type; `type` is its SpareTypeId.
  google::protobuf::Message* TakeMessage(size_t type) noexcept;  // nullptr when none
  // The spare of type `type` that TakeMessage() returns `ahead` takes from now, or nullptr.
  google::protobuf::Message* PeekMessage(size_t type, size_t ahead) const noexcept {
    return type < messages_.size() ? messages_[type].Peek(ahead) : nullptr;
  }
  void PutMessage(size_t type, google::protobuf::Message* message);  // takes ownership (see Put)
  void PutString(std::string* s) { strings_.Put(s); }                // takes ownership (see Put)

  SpareQueue<std::string>& strings() noexcept { return strings_; }
  // Throws std::bad_alloc.
  SpareQueue<google::protobuf::Message>& messages(size_t type);

  // Gathered elements go in front of the spares that are unused when BeginGather() is called.
  void BeginGather() noexcept;
  void EndGather() noexcept;

  size_t message_count() const noexcept;
  size_t string_count() const noexcept { return strings_.size(); }
  bool empty() const noexcept { return message_count() == 0 && string_count() == 0; }
  // Heap bytes the spares hold (walks them: for sampling only).
  size_t SpaceUsed() const;
  // Destroys every spare.
  void Clear() noexcept;

  // Spare strings may be stale: cleared without their bytes erased (ShapePlan::ForgetStrings), fit
  // only for a parse, which overwrites every string it adds. A fitter whose message code other than
  // a parse fills (a response) calls ScrubStrings() first, which clears them if they are stale.
  void MarkStringsStale() noexcept { strings_stale_ = true; }
  template <class F>
  void ForEachString(F&& f) const {
    strings_.ForEach(f);
  }
  bool strings_stale() const noexcept { return strings_stale_; }
  void ScrubStrings() noexcept {
    if (!strings_stale_) return;
    strings_.ForEach([](std::string& s) { s.clear(); });
    strings_stale_ = false;
  }

 private:
  bool strings_stale_ = false;
  bool on_arena_ = false;
  SpareQueue<std::string> strings_;
  std::vector<SpareQueue<google::protobuf::Message>> messages_;  // by type id
};

}  // namespace arenarpc::memory
