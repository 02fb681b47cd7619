#pragma once
// ReusePool: a bounded pool of heap message objects of one type that are cleared in place (keeping
// their sub-message tree, see kept_tree.h) instead of destroyed, so the next call reuses the
// allocations of the previous one.
//
// Requests are shaped before they are filled (Shape(), see shape_plan.h), so a request object
// retains about the largest request it has held. Objects that are not shaped (responses: their
// shape is the handler's to decide) keep cleared elements by position and grow towards the
// element-wise maximum of their contents.
//
// Bounded memory: each object's retained size is estimated. An object over max_object_bytes first
// drops its spare elements and the cleared elements beyond its current content (a "trim"); only
// if its content alone is still over the cap, or it would push the pool over max_pool_bytes, is it
// destroyed instead of pooled (a "rebuild": the next Take() builds a fresh one). The estimate is an
// exact SpaceUsedLong() walk on an object's first release, on a release whose content is larger on
// the wire than any before (when the object may have grown) and every sample_every-th release
// after; in between it is the larger of the last sample and the content's wire size scaled by the
// smallest space/wire ratio sampled (O(1): the shaped bytes of a request, the cached serialized
// size of a message that was serialized, e.g. every response).
//
// Thread-safe and lock-light: objects sit in per-thread-hashed shards, each with its own mutex, so
// threads rarely meet on one lock (a thread falls back to other shards only when its own is empty
// on Take or full on Give). An object may be given back on any thread.

#include <google/protobuf/arena.h>
#include <google/protobuf/io/zero_copy_stream.h>

#include <atomic>
#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "memory/reuse/kept_tree.h"
#include "arenarpc/memory/message_memory.h"
#include "memory/reuse/response_mirror.h"
#include "memory/reuse/shape_plan.h"
#include "memory/reuse/spare_elements.h"

namespace arenarpc::memory {

struct ReusePoolStats {
  uint64_t reuses = 0;                   // Take() served from the pool
  uint64_t creations = 0;                // Take() that built a new object
  uint64_t rebuilds = 0;  // objects destroyed at Give(): over a byte cap, or on an arena and not
                          // filled by the strategy's parse
  uint64_t trims = 0;                    // objects cut back to their content at Give() (byte cap)
  uint64_t drops = 0;                    // objects destroyed at Give() because the pool was full
  uint64_t objects_pooled = 0;           // objects in the pool now
  uint64_t retained_bytes_estimate = 0;  // estimated bytes retained by pooled objects
};

// Anonymous memory mapped for one arena's first block: its pages cost memory only once touched,
// and go back to the system when it is unmapped.
class MappedBlock {
 public:
  MappedBlock() = default;
  explicit MappedBlock(size_t size) noexcept;  // empty() when the mapping failed
  ~MappedBlock();
  MappedBlock(const MappedBlock&) = delete;
  MappedBlock& operator=(const MappedBlock&) = delete;
  MappedBlock(MappedBlock&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  MappedBlock& operator=(MappedBlock&& other) noexcept {
    if (this != &other) {
      MappedBlock old(std::move(*this));
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  bool empty() const noexcept { return data_ == nullptr; }
  char* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
};

class ReusePool {
 public:
  // One pooled object and its bookkeeping. Owned by the pool while pooled, by a caller otherwise.
  struct Entry {
    Entry() = default;
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;
    ~Entry();
    // A handler-filled object's arena block (see ReusePool's on_arena), unmapped after the arena.
    MappedBlock block;
    // The object's own arena (on_arena pools), destroyed before `block` and after everything
    // else: it owns the message, its tree, stash and spares, which the members below only hold.
    std::unique_ptr<google::protobuf::Arena> arena;
    std::unique_ptr<google::protobuf::Message> message;
    std::vector<std::unique_ptr<google::protobuf::Message>> stash;  // see KeptTreePlan
    SpareElements spares;                                           // see ShapePlan
    std::vector<uint32_t> scratch;  // ShapePlan working memory, kept for the next call
    int64_t shaped_bytes = -1;      // wire size of the last Shape(); -1: not shaped this use
    size_t retained_estimate = 0;
    // Strings its clears let go of to its arena (KeptTreePlan::Clear), held until the arena dies:
    // counted in its size, so that an object whose arena keeps them is rebuilt at the cap.
    size_t let_go_bytes = 0;
    double space_per_wire_byte = 0;  // smallest sampled SpaceUsed/wire ratio; 0 until known
    uint32_t releases = 0;
    size_t largest_wire = 0;   // the largest content's wire size seen at a release
    // Settle's candidates (KeptTreePlan::Settle): the sub-messages the last clear kept attached,
    // and those of them a wholly shaped request's bytes did not contain.
    std::vector<const google::protobuf::Message*> kept;
    std::vector<const google::protobuf::Message*> absent;
    bool shaped_whole = false;  // this use's Shape() scanned all the bytes: `absent` is complete
    Entry* partner = nullptr;  // the reuse strategy links a request entry to its response entry
    bool fitted = false;       // a response the reuse strategy's mirror fitted this use
    google::protobuf::Arena* response_arena = nullptr;  // the reuse strategy's arena response
  };

  // What fills a pool's objects: the strategy's parse (requests) or a handler (responses).
  enum class FilledBy { kParse, kHandler };

  // Throws std::invalid_argument for invalid settings. `on_arena`: make each object on an arena
  // of its own, so that its tree is packed in the order it was built rather than spread over the
  // heap (docs/benchmarks.md, "Kept-tree layout"); granted only where that is safe (on_arena()):
  // the type's Clear() keeps every object (KeptTreePlan::keeps_objects) and cleared elements move
  // as blocks. An object filled by the parse is pooled only as the parse left it. A handler may
  // hand its object anything (set_allocated_*, AddAllocated), which the arena would keep until
  // the object dies: handler-filled objects get arenas only where the shape plan's walk reaches
  // every object the type can own (ShapePlan::covers_every_object), each on one mapped block of
  // max_object_bytes, and at release an object whose content holds anything from outside its
  // block is destroyed, not pooled. Nor where kept sub-messages are detached before the handler
  // runs (proto3 singular ones without a has-bit, unless keep_response_submessages): the handler
  // would make a new one each call, and the arena keep every one.
  ReusePool(const google::protobuf::Message& prototype, const ReuseSettings& settings,
            bool on_arena = false, FilledBy filled_by = FilledBy::kParse);
  ~ReusePool();
  ReusePool(const ReusePool&) = delete;
  ReusePool& operator=(const ReusePool&) = delete;

  Entry* Take();  // an empty message, pooled or new; throws std::bad_alloc
  // Clears and pools it, or destroys it. `fitted_by`: the mirror that fitted this response for
  // the call, if one did (its cleared elements are then gathered for the next fit). An object used
  // neither shaped nor fitted drops its spares, which nothing would deal again.
  void Give(Entry* entry, const ResponseMirror* fitted_by = nullptr) noexcept;
  // Detaches the kept sub-messages the content left out: for a wholly shaped request, those its
  // bytes did not contain (an empty one they did contain stays); otherwise those still empty.
  // Detaches every kept sub-message still attached, so the message reads like a fresh one (a
  // response the handler is about to write: presence is then exactly heap's).
  void DetachKept(Entry& entry) const noexcept {
    plan_.Settle(*entry.message, entry.stash, entry.kept, /*only_empty=*/false);
    entry.kept.clear();
  }
  void Settle(Entry& entry) const noexcept {
    if (entry.shaped_whole) {
      plan_.Settle(*entry.message, entry.stash, entry.absent, /*only_empty=*/false);
    } else {
      plan_.Settle(*entry.message, entry.stash, entry.kept, /*only_empty=*/true);
    }
  }
  // Fits a taken entry's kept tree to `wire`, the bytes about to be merged into its message.
  void Shape(Entry& entry, google::protobuf::io::ZeroCopyInputStream& wire) const noexcept {
    entry.shaped_whole = shape_plan_.Shape(*entry.message, wire, entry.spares, entry.scratch,
                                           &entry.absent);
    entry.shaped_bytes = wire.ByteCount();
  }

  // What a taken entry's object holds now, without a walk: its estimate from its last release,
  // or more when this use's shaped bytes scale to more; empty for an object never released.
  static std::optional<uint64_t> HeldBytes(const Entry& entry) noexcept {
    if (entry.releases == 0) return std::nullopt;
    const double shaped = entry.shaped_bytes > 0
                              ? static_cast<double>(entry.shaped_bytes) * entry.space_per_wire_byte
                              : 0;
    return std::max<uint64_t>(entry.retained_estimate, static_cast<uint64_t>(shaped));
  }

  ReusePoolStats stats() const noexcept;
  // Destroys every pooled object (objects taken now are pooled again when given back).
  void Trim() noexcept;
  const ReuseSettings& settings() const noexcept { return settings_; }
  bool on_arena() const noexcept { return on_arena_; }

 private:
  struct alignas(64) Shard {
    std::mutex mu;
    std::vector<std::unique_ptr<Entry>> entries;
    size_t capacity = 0;  // the shards' capacities add up to max_pooled_objects
  };
  // Objects on arenas: blocks start small (a small request's object stays small) and grow to
  // this, a bound on what an object holds beyond its tree.
  static constexpr size_t kArenaStartBlock = 4096;
  static constexpr size_t kArenaMaxBlock = 256u << 10;
  // A handler-filled object on an arena is destroyed after this many uses: what was given to its
  // arena outside the content (Arena::Own, an object handed and dropped in one call) lives no
  // longer.
  static constexpr uint32_t kMaxHandlerArenaUses = 4096;
  // What an object's arena holds: its block's used part for a handler-filled object (the rest of
  // the block is untouched), everything it allocated otherwise.
  static size_t ArenaBytes(const Entry& entry) noexcept;
  size_t Measure(Entry& entry, size_t wire) noexcept;  // `wire`: the content's size, 0 if unknown
  size_t MeasureExactly(Entry& entry) noexcept;
  void Destroy(Entry* entry) noexcept;
  std::unique_ptr<Entry> Pop(Shard& shard) noexcept;  // the shard's last object, or null

  const google::protobuf::Message& prototype_;
  const ReuseSettings settings_;
  const KeptTreePlan plan_;
  const ShapePlan shape_plan_;
  const FilledBy filled_by_;
  const bool on_arena_;
  std::vector<Shard> shards_;
  alignas(64) std::atomic<uint64_t> pooled_bytes_{0};
  std::atomic<uint64_t> pooled_objects_{0};
  std::atomic<uint64_t> reuses_{0}, creations_{0}, rebuilds_{0}, drops_{0}, trims_{0};
};

}  // namespace arenarpc::memory
