#include "memory/reuse/reuse_pool.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <sys/mman.h>

#include <algorithm>
#include <functional>
#include <thread>

#include "memory/option_errors.h"
#include "memory/reuse/cleared_tail.h"

namespace arenarpc::memory {
namespace {

size_t ShardCount(size_t max_objects) {
  const size_t hw = std::max(1u, std::thread::hardware_concurrency());
  return std::clamp<size_t>(hw, 1, std::min<size_t>(16, max_objects));
}

// A small per-thread number, stable for the thread's life, picks the thread's home shard.
size_t ThreadIndex() noexcept {
  static std::atomic<size_t> next{0};
  thread_local const size_t index = next.fetch_add(1, std::memory_order_relaxed);
  return index;
}

}  // namespace

MappedBlock::MappedBlock(size_t size) noexcept {
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
  if (p == MAP_FAILED) return;
  data_ = static_cast<char*>(p);
  size_ = size;
}

MappedBlock::~MappedBlock() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

ReusePool::Entry::~Entry() {
  if (!arena) return;
  // The arena owns these: let go of them, then the arena frees them all.
  (void)message.release();
  for (auto& kept : stash) (void)kept.release();
}

ReusePool::ReusePool(const google::protobuf::Message& prototype, const ReuseSettings& settings,
                     bool on_arena, FilledBy filled_by)
    : prototype_(prototype),
      settings_((ThrowIfInvalid(ReuseSettingsError(settings)), settings)),
      plan_(*prototype.GetDescriptor()),
      shape_plan_(*prototype.GetDescriptor()),
      filled_by_(filled_by),
      on_arena_(on_arena && plan_.keeps_objects() && cleared_tail::BlocksAvailable() &&
                (filled_by == FilledBy::kParse ||
                 (shape_plan_.covers_every_object() &&
                  (plan_.slot_count() == 0 || settings_.keep_response_submessages)))),
      shards_(ShardCount(settings.max_pooled_objects)) {
  // Split max_pooled_objects exactly (shards <= max_pooled_objects, so each holds at least one).
  const size_t base = settings_.max_pooled_objects / shards_.size();
  const size_t extra = settings_.max_pooled_objects % shards_.size();
  for (size_t i = 0; i < shards_.size(); ++i) {
    shards_[i].capacity = base + (i < extra ? 1 : 0);
    shards_[i].entries.reserve(shards_[i].capacity);  // Give() must not allocate
  }
}

ReusePool::~ReusePool() = default;  // pooled entries are owned by the shards

ReusePool::Entry* ReusePool::Take() {
  // Home shard first, then the others: an object released on another thread is still found.
  const size_t home = ThreadIndex() % shards_.size();
  for (size_t i = 0; i < shards_.size(); ++i) {
    if (std::unique_ptr<Entry> entry = Pop(shards_[(home + i) % shards_.size()])) {
      reuses_.fetch_add(1, std::memory_order_relaxed);
      return entry.release();
    }
  }
  auto entry = std::make_unique<Entry>();
  if (on_arena_) {
    google::protobuf::ArenaOptions options;
    options.start_block_size = kArenaStartBlock;
    options.max_block_size = kArenaMaxBlock;
    if (filled_by_ == FilledBy::kHandler) {
      // One block the size of the cap: a content within it is the object's own (see Give).
      MappedBlock block(settings_.max_object_bytes);
      if (!block.empty()) {
        entry->block = std::move(block);
        options.initial_block = entry->block.data();
        options.initial_block_size = entry->block.size();
      }
    }
    if (filled_by_ == FilledBy::kParse || !entry->block.empty()) {
      entry->arena = std::make_unique<google::protobuf::Arena>(options);
      entry->spares.SetOnArena();
    }  // else: no block mapped, this object lives on the heap
  }
  entry->message.reset(prototype_.New(entry->arena.get()));
  entry->stash.resize(plan_.slot_count());
  creations_.fetch_add(1, std::memory_order_relaxed);
  return entry.release();
}

size_t ReusePool::MeasureExactly(Entry& entry) noexcept {
  size_t bytes = entry.message->SpaceUsedLong() + entry.spares.SpaceUsed();
  for (const auto& kept : entry.stash) {
    if (kept) bytes += kept->SpaceUsedLong();
  }
  // An arena also holds what the tree no longer reaches (arrays outgrown); the walk also counts
  // long strings' buffers, which are on the heap.
  if (entry.arena) bytes = std::max<size_t>(bytes, ArenaBytes(entry));
  entry.retained_estimate = bytes;
  return bytes;
}

size_t ReusePool::Measure(Entry& entry, size_t wire) noexcept {
  // A walk reads every string of the object and of its spares, most of them cold since the last
  // call, and evicts what the next call needs: on the gRPC echo server, walking every 16th release
  // cost 2-10 % of a reused call (two A/B batches). So walk when an object may have grown (its
  // first content, a content larger than any before) and rarely otherwise (strings keep the
  // capacity of their longest value, which a larger content need not show).
  const bool grew = wire > entry.largest_wire;
  entry.largest_wire = std::max(entry.largest_wire, wire);
  const bool sample = entry.releases == 0 || grew || entry.releases % settings_.sample_every == 0;
  ++entry.releases;
  if (sample) {
    const size_t bytes = MeasureExactly(entry);
    // The smallest ratio seen: an object's first sample measures memory for exactly its content;
    // later ones also count capacity kept from bigger earlier contents, which would inflate it.
    if (wire > 0) {
      const double ratio = static_cast<double>(bytes) / static_cast<double>(wire);
      entry.space_per_wire_byte =
          entry.space_per_wire_byte > 0 ? std::min(entry.space_per_wire_byte, ratio) : ratio;
    }
  } else if (wire > 0 && entry.space_per_wire_byte > 0) {
    // Retained capacity only grows between trims, so the estimate never decreases here.
    entry.retained_estimate =
        std::max(entry.retained_estimate,
                 static_cast<size_t>(static_cast<double>(wire) * entry.space_per_wire_byte));
  }
  return entry.retained_estimate;
}

void ReusePool::Destroy(Entry* entry) noexcept { std::unique_ptr<Entry> owned(entry); }

size_t ReusePool::ArenaBytes(const Entry& entry) noexcept {
  return entry.block.empty() ? entry.arena->SpaceAllocated() : entry.arena->SpaceUsed();
}

void ReusePool::Give(Entry* entry, const ResponseMirror* fitted_by) noexcept {
  if (entry == nullptr) return;
  // Shaped means filled by the merge of the shaped bytes and by nothing else (MessagePair's
  // contract), so its strings need not be erased: the next parse overwrites them.
  const bool parsed = entry->shaped_bytes >= 0;
  // The content's wire size: the shaped bytes, or the cached size if the message was serialized.
  const size_t wire = parsed ? static_cast<size_t>(entry->shaped_bytes)
                             : static_cast<size_t>(std::max(0, entry->message->GetCachedSize()));
  entry->partner = nullptr;
  entry->shaped_bytes = -1;
  entry->shaped_whole = false;
  entry->absent.clear();
  entry->fitted = false;
  // Measure first: whether the object is trimmed, destroyed or pooled depends on its size.
  size_t bytes = Measure(*entry, wire);
  if (entry->arena) {
    // A parse-filled arena object is pooled only as the strategy's parse left it: other code
    // filling it (a runtime that parses with Clear(), a JSON conversion) lets objects go that the
    // arena keeps, and it would grow call after call. A handler-filled one is pooled only if its
    // content is all its own (in its block, not handed to it: the arena would keep that until the
    // object dies), its tree did not outgrow the block and it has not served too many calls. An
    // arena also gives nothing back but whole, so over the cap it is destroyed, not trimmed. Its
    // size is read every time (cheap): what it holds beyond the tree is not in the sampled
    // estimate.
    bytes = std::max<size_t>(bytes, ArenaBytes(*entry)) + entry->let_go_bytes;
    entry->retained_estimate = bytes;
    const bool keep =
        filled_by_ == FilledBy::kParse
            ? parsed
            : entry->arena->SpaceAllocated() <= entry->block.size() &&
                  entry->releases <= kMaxHandlerArenaUses &&
                  shape_plan_.ContentWithin(*entry->message, entry->block.data(),
                                            entry->block.data() + entry->block.size());
    if (!keep || bytes > settings_.max_object_bytes) {
      rebuilds_.fetch_add(1, std::memory_order_relaxed);
      return Destroy(entry);
    }
  }
  if (bytes > settings_.max_object_bytes) {
    // Cut back to the content before giving up on the object: spares and the cleared elements
    // that positional reuse accumulated are usually most of it.
    entry->spares.Clear();
    shape_plan_.TrimExcess(*entry->message);
    bytes = MeasureExactly(*entry);
    if (bytes > settings_.max_object_bytes) {
      rebuilds_.fetch_add(1, std::memory_order_relaxed);
      return Destroy(entry);
    }
    trims_.fetch_add(1, std::memory_order_relaxed);
  }
  // Reserve room under the pool byte cap before pooling.
  uint64_t pooled = pooled_bytes_.load(std::memory_order_relaxed);
  do {
    if (pooled + bytes > settings_.max_pool_bytes) {
      rebuilds_.fetch_add(1, std::memory_order_relaxed);
      return Destroy(entry);
    }
  } while (!pooled_bytes_.compare_exchange_weak(pooled, pooled + bytes, std::memory_order_relaxed));

  const bool stale = parsed && shape_plan_.ForgetStrings(*entry->message);
  try {
    entry->let_go_bytes += plan_.Clear(*entry->message, entry->stash, entry->kept);
  } catch (...) {  // reflection does not throw in practice; never pool a half-cleared object
    pooled_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
    rebuilds_.fetch_add(1, std::memory_order_relaxed);
    return Destroy(entry);
  }
  if (parsed) {
    // Stale strings leave the tree at once: in the spares only a shaping (for a parse) deals
    // them, and a response fit scrubs them first, so hand-filled code never meets one.
    shape_plan_.Gather(*entry->message, entry->spares, /*cold=*/false);  // just cleared: hot
    if (stale) entry->spares.MarkStringsStale();
  } else if (fitted_by != nullptr) {
    fitted_by->GatherCleared(*entry->message, entry->spares);
  } else if (!entry->spares.empty()) {
    entry->spares.Clear();  // left from an earlier role: no shaping or fit will deal them
  }
  // Home shard first; when it is full, any shard with room.
  const size_t home = ThreadIndex() % shards_.size();
  for (size_t i = 0; i < shards_.size(); ++i) {
    Shard& shard = shards_[(home + i) % shards_.size()];
    std::lock_guard lock(shard.mu);
    if (shard.entries.size() < shard.capacity) {
      shard.entries.emplace_back(entry);
      pooled_objects_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  pooled_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
  drops_.fetch_add(1, std::memory_order_relaxed);
  Destroy(entry);
}

std::unique_ptr<ReusePool::Entry> ReusePool::Pop(Shard& shard) noexcept {
  std::unique_ptr<Entry> entry;
  {
    std::lock_guard lock(shard.mu);
    if (shard.entries.empty()) return entry;
    entry = std::move(shard.entries.back());
    shard.entries.pop_back();
  }
  pooled_bytes_.fetch_sub(entry->retained_estimate, std::memory_order_relaxed);
  pooled_objects_.fetch_sub(1, std::memory_order_relaxed);
  return entry;
}

void ReusePool::Trim() noexcept {
  // One object at a time: no allocation, each shard's lock held briefly, destroyed outside it.
  for (Shard& shard : shards_) {
    while (Pop(shard)) {
    }
  }
}

ReusePoolStats ReusePool::stats() const noexcept {
  ReusePoolStats s;
  s.reuses = reuses_.load(std::memory_order_relaxed);
  s.creations = creations_.load(std::memory_order_relaxed);
  s.rebuilds = rebuilds_.load(std::memory_order_relaxed);
  s.drops = drops_.load(std::memory_order_relaxed);
  s.trims = trims_.load(std::memory_order_relaxed);
  s.objects_pooled = pooled_objects_.load(std::memory_order_relaxed);
  s.retained_bytes_estimate = pooled_bytes_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace arenarpc::memory
