#pragma once
// MessageMemory: how a call's request and response messages are created and released.
//
//   MessageMemory (a strategy: heap | arena | paged | reuse | auto; thread-safe, shared)
//     -> Bind(request prototype, response prototype) -> MethodMemory (per method, thread-safe)
//          -> Acquire() -> MessagePair (one call's request + response; RAII, move-only)
//
// A MessagePair is used by one call at a time and may be released on any thread. The strategy owns
// the messages' whole lifecycle; a runtime makes exactly these calls per call:
//   pair = method.Acquire();
//   pair.ParseRequest(bytes);   // fills request() from its wire bytes
//   ... handler reads request(), writes response() ...
//   pair.PrepareResponse();     // then serialize response()
//   pair.Release();             // or destroy the pair
// Whatever the handler writes, the response serializes as a heap message with that content would
// (unless ReuseSettings::keep_response_submessages is turned on: docs/memory.md).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "arenarpc/deprecated_option.h"
#include "arenarpc/memory/memory_mode.h"
#include "arenarpc/memory/page_allocator.h"
#include "arenarpc/memory/serialized_message.h"

namespace google::protobuf {
class Arena;
class Message;
}  // namespace google::protobuf

namespace arenarpc::memory {

// Arena block sizes, as brpc/tRPC-cpp expose them (protobuf ArenaOptions start/max_block_size).
struct ArenaSettings {
  size_t start_block_size = 256;  // brpc's default
  size_t max_block_size = 8192;   // brpc's default
};
// Process-wide defaults, read when a strategy is created without explicit settings.
ArenaSettings DefaultArenaSettings();
// 0, or -1 with *error naming the setting (the defaults stay as they were).
int SetDefaultArenaSettings(const ArenaSettings& settings, std::string* error);

// Bounds of the reuse ("full reuse") strategy.
struct ReuseSettings {
  size_t max_pooled_objects = 1024;    // per message type
  // An object retaining more is cut back to its content, and destroyed if still over. Parsed
  // messages hold 10-40x their wire size, and a pooled object keeps room for the largest content
  // it met: below that, objects are cut back and grown again call after call.
  size_t max_object_bytes = 16u << 20;
  size_t max_pool_bytes = 64u << 20;   // per message type, estimated retained bytes
  // Re-measure an object's retained size (a walk of all of it) every N releases, besides its first
  // release and any release of a content larger than it held before.
  uint32_t sample_every = 256;
  // Size each response's reusable storage after its request where the two types share fields; a
  // method whose responses turn out not to follow their requests in size stops being mirrored.
  bool mirror_responses = true;
  // Also keep a response's proto3 singular sub-message fields (those without `optional`) attached
  // between calls. Much less work where a response's tree hangs from such a field, but their
  // presence can then differ from heap's: has_x() is true before the handler writes x, and an x
  // the handler reaches (mutable_x(), a copy of an empty message) and leaves empty is not sent.
  // Off (the default): every reply is heap's bytes, whatever the handler does; such a field is
  // then created by the handler like a heap message's. Declaring the field `optional` (the same
  // bytes on the wire) lets reuse keep it exactly.
  bool keep_response_submessages = false;
  // With keep_response_submessages off: a response type with subtrees an exact reuse cannot keep
  // (proto3 singular sub-messages without `optional`, oneof sub-messages, maps, anywhere in its
  // tree) is made on a paged arena per call instead of pooled, so that the handler builds them as
  // cheaply as the paged strategy does (requests are still pooled and reused). false: such
  // responses are pooled, and the handler builds those subtrees on the heap.
  bool arena_responses = true;
  // A method whose calls are small — the running means of its requests' and responses' wire
  // sizes add up to less than this — has both messages made on a paged arena per call, as the
  // paged strategy would: below about a kilobyte, pooling's fixed work per call (taking and
  // giving objects, fitting them to the bytes) costs more than the allocations it saves
  // (docs/benchmarks.md). The means follow the traffic, so a method moves back to the pools when
  // its calls grow. 0: every call uses the pools.
  size_t min_call_bytes = 1024;
  // Make each pooled request on an arena of its own, so that its kept tree is packed in the order
  // it was built instead of spread over the heap: fewer cache misses refilling it
  // (docs/benchmarks.md, "Kept-tree layout"). Only where the request type's Clear() keeps every
  // object of its tree (no maps, oneof string/message members, extensions, or proto3 singular
  // sub-messages inside repeated elements); other types stay on the heap. A request not filled by
  // the strategy's own parse (a runtime that parses with Clear(), JSON) is not pooled then, and
  // an object over max_object_bytes is destroyed rather than trimmed.
  bool request_arenas = true;
  // The same for pooled responses, whose handlers fill them: each is made on an arena of its own
  // (one block of max_object_bytes, mapped lazily) where, besides the conditions above, every
  // field of the type's tree that can hold an object of its own is a plain message field or a
  // repeated string/bytes field, and (unless keep_response_submessages) every singular
  // sub-message has a has-bit. Whatever a handler hands such a response (set_allocated_*,
  // AddAllocated) the arena would own until the object dies; so at release every sub-message and
  // string of the content is checked to lie in the object's block, and an object holding one from
  // elsewhere is destroyed (with what was handed to it) instead of pooled, as is one whose tree
  // outgrew the block. Objects given to the arena directly (Arena::Own) live until the object is
  // destroyed: at the latest after 4096 uses.
  bool response_arenas = true;
};

// The "auto" strategy: per method, it runs trials on live calls (the candidates take turns in
// blocks of trial_block calls), charges each call the thread CPU time from Acquire() to Release()
// (parse, handler, serialize, release; a call is measured only if it ran on one thread without
// suspending), and serves the method with the cheapest candidate (mean CPU per call, each call
// scaled to the trial's call size by a cost model fitted over it; docs/memory.md). It runs a new
// trial after recheck_calls calls or recheck_interval, and when the method's request size moves
// by shape_change times. Every candidate is exact, so a switch never changes what goes on the wire.
ARENARPC_DEPRECATED_FIELDS_BEGIN
struct AutoSettings {
  // The first one serves a method until its first trial ends, and whenever no call can be
  // measured (handlers that finish their calls on another thread). Built-in modes, or their
  // names ("paged", ...); not kAuto, none twice.
  std::vector<NamedEnum<MemoryMode>> candidates = {MemoryMode::kPaged, MemoryMode::kReuse,
                                                   MemoryMode::kArena, MemoryMode::kHeap};
  // First calls of each candidate's turn, not counted: from its 8th call on, a candidate's call
  // cost what the same call costs it alone within 3 % (bench/micro/trial_turn_bench).
  uint32_t warmup_calls = 16;
  // Counted calls per candidate in a trial: a mean's interval narrows as 1/sqrt(n), and 128 calls
  // that stray 3-8 % from their cost (in-process) put it within +-1.5 %, inside switch_margin with
  // room for a loaded machine's larger spread.
  uint32_t trial_calls = 128;
  // Consecutive calls a candidate serves before the next takes its turn. The default, warmup_calls
  // + trial_calls, gives each candidate one run of calls per trial: the strategies share the CPU
  // caches and malloc's heap, and in short interleaved blocks each ran in the state the others
  // left (blocks of 8 ranked the candidates far from how they cost serving alone). Smaller blocks
  // spread a slow candidate's calls and the machine's load changes over the trial.
  uint32_t trial_block = 144;
  uint32_t sample_every = 64;  // between trials: the chosen candidate is measured once in N calls
  uint64_t recheck_calls = 200000;
  std::chrono::milliseconds recheck_interval{std::chrono::minutes(5)};  // >= 1 ms
  // A trial also starts when the method's mean request size moves by this factor from that of
  // the last trial's calls and the calls after it, in windows of 64 sampled calls in a row whose
  // pooled mean is also beyond what the spread of sizes explains (a steady mix of sizes starts
  // none; docs/memory.md). > 1.
  double shape_change = 2.0;
  // A trial also starts when the method's call rate (calls per second of busy time, over windows
  // of at least a second and 16 sampled calls; a pause counts at most 2 x rate_change sampling
  // intervals) moves by this factor from the first window after the last trial, in two windows
  // in a row (one burst or lull does not start one). > 1; 0 = off.
  double rate_change = 4.0;
  // A recheck moves the method only to a candidate this much cheaper (the first trial and its
  // confirmation take the cheapest they can tell apart).
  double switch_margin = 0.05;
  // Memory before CPU: > 0, a candidate whose held bytes per call (arena bytes, or SpaceUsedLong()
  // of the two messages) pass this many times the leanest measured candidate's is not chosen,
  // however cheap (e.g. 1.5 keeps a method off a strategy that holds half as much again). 0 = off.
  double max_held_ratio = 0;

  // Deprecated spelling, for one release (arenarpc/deprecated_option.h): wins when set (> 0).
  [[deprecated("use recheck_interval")]] uint32_t recheck_interval_ms =
      kUnsetOption<uint32_t>;
};
ARENARPC_DEPRECATED_FIELDS_END

// What "auto" decided for one method (MethodMemory::Choice()).
struct MemoryChoice {
  struct Candidate {
    std::string name;
    uint64_t samples = 0;       // calls counted in the last trial
    // Mean thread CPU per call in the last trial (its total CPU over its calls' expected cost by
    // the trial's cost model, times that cost at reference_bytes), and a ~95 % interval of it.
    uint64_t cpu_ns = 0;
    uint64_t cpu_ns_low = 0, cpu_ns_high = 0;
    uint64_t raw_cpu_ns = 0;  // median thread CPU per call as measured
    uint64_t wire_bytes = 0;  // mean request + response wire bytes of its counted calls
    // Its calls' mean size was near enough reference_bytes to rank it (docs/memory.md).
    bool comparable = false;
    uint64_t held_bytes = 0;  // bytes the call's messages held at release, per reference call
  };
  std::string chosen;
  std::vector<Candidate> candidates;  // in AutoSettings::candidates order
  // The last trial's scale: the median of its candidates' mean request + response wire bytes per
  // call, and the cost model
  // fitted over it (CPU per call = fixed_ns + ns_per_kib * KiB; ns_per_kib 0: cost did not
  // follow size, calls are compared as measured).
  uint64_t reference_bytes = 0;
  double fixed_ns = 0, ns_per_kib = 0;
  uint64_t trials = 0;                // finished trials
  uint64_t switches = 0;              // trials that moved the method to another candidate
  bool in_trial = false;
  int64_t decided_unix_ms = 0;        // when the last trial ended (0: none yet)
  uint64_t chosen_cpu_ns = 0;         // the chosen candidate's CPU per call since (moving mean)
  std::string reason;                 // why the last trial started and what it found
  // The last decisions (at most kHistory), oldest first: every trial's outcome, switch or not.
  struct Decision {
    int64_t unix_ms = 0;
    std::string from, to;  // the candidate serving before and after (equal: kept)
    std::string reason;    // as `reason` was then, with the trial's figures
  };
  static constexpr size_t kHistory = 16;
  std::vector<Decision> history;
};

// A response field whose declaration keeps the exact reuse strategy from keeping its subtree
// between calls (a proto3 singular sub-message without `optional`): the server's presence advisor
// lists them with the share of a response's memory they hold (/memory, MethodStats).
struct PresenceAdvice {
  std::string field;         // "pkg.Type.field"
  std::string declared;      // as the .proto declares it now: "ComplexPayload payload = 2;"
  std::string suggested;     // the same bytes on the wire: "optional ComplexPayload payload = 2;"
  double share = 0;          // of the sampled responses' bytes (SpaceUsedLong) under this field
};

struct MemoryOptions {
  ArenaSettings arena = DefaultArenaSettings();
  ReuseSettings reuse;
  AutoSettings automatic;
  // Page pool for the "paged" strategy (and the reuse strategy's scratch arena); the defaults are
  // PagePoolOptions'.
  size_t page_size = PagePoolOptions{}.page_size;
  size_t page_cache_capacity = PagePoolOptions{}.capacity_pages;  // pages
  size_t thread_cache_pages = PagePoolOptions{}.thread_cache_pages;
};

// Counters of one strategy, readable at any time (relaxed atomics, approximately consistent).
struct MemoryStats {
  uint64_t acquired = 0;  // pairs handed out
  uint64_t released = 0;  // pairs returned
  // paged strategy
  uint64_t page_allocations = 0, page_cache_hits = 0, page_cache_misses = 0;
  uint64_t pages_cached = 0, pages_outstanding = 0;
  // reuse strategy
  uint64_t reuses = 0, rebuilds = 0, trims = 0, objects_pooled = 0, retained_bytes_estimate = 0;
  uint64_t requests_shaped = 0;     // requests fitted to their wire bytes before the merge
  uint64_t responses_mirrored = 0;  // responses fitted to their request's shape
  uint64_t calls_on_arena = 0;      // calls below min_call_bytes, made on a paged arena
};

class MethodMemory;

class MessagePair {
 public:
  MessagePair() = default;
  MessagePair(const MessagePair&) = delete;
  MessagePair& operator=(const MessagePair&) = delete;
  MessagePair(MessagePair&& other) noexcept { *this = std::move(other); }
  MessagePair& operator=(MessagePair&& other) noexcept;
  ~MessagePair() { Release(); }

  google::protobuf::Message* request() const noexcept { return request_; }
  google::protobuf::Message* response() const noexcept { return response_; }
  // The arena both messages live on, or nullptr (heap, reuse).
  google::protobuf::Arena* arena() const noexcept { return arena_; }
  explicit operator bool() const noexcept { return owner_ != nullptr; }
  // The response holds exactly what its bytes say (heap, arena, paged), so reflection — a JSON
  // reply — may read it directly; false (reuse, your own strategies unless they say so): print it
  // from its serialized bytes.
  bool response_plain() const noexcept { return response_plain_; }

  // What the two messages hold now, when the strategy keeps that account without walking them
  // (the arena's allocated bytes; reuse's per-object estimates); empty otherwise (heap, your own
  // strategies unless they say so): walk SpaceUsedLong() if you need it.
  std::optional<uint64_t> held_bytes() const noexcept;

  // Returns the messages to their strategy now. Idempotent; any thread.
  void Release() noexcept;

  // Fills the (empty) request from `bytes`, exactly one serialized request. Call once, before the
  // handler reads the request. kInvalidBytes / kMissingRequiredFields: the request may hold part
  // of the payload; release the pair without using it.
  ParseResult ParseRequest(SerializedMessage& bytes) const;
  // Call once, after the handler has written the response and before it is serialized. May also
  // be called on the still empty response, before the handler writes it (where the runtime cannot
  // step in before serialization): what is written afterwards still serializes as with heap.
  void PrepareResponse() const noexcept;

 private:
  friend class MethodMemory;
  MethodMemory* owner_ = nullptr;
  google::protobuf::Message* request_ = nullptr;
  google::protobuf::Message* response_ = nullptr;
  google::protobuf::Arena* arena_ = nullptr;
  void* cookie_ = nullptr;  // strategy-private (e.g. the pooled arena holder)
  bool response_plain_ = false;
};

// One method's binding to a strategy. Thread-safe. Must outlive every pair it handed out.
class MethodMemory {
 public:
  virtual ~MethodMemory() = default;
  virtual MessagePair Acquire() = 0;
  // The "auto" strategy's current decision for this method; empty for the fixed strategies.
  virtual std::optional<MemoryChoice> Choice() const { return std::nullopt; }
  // This method's own counters: its pairs acquired and released, and what it did with them
  // (reuse: requests shaped, responses mirrored, calls on the arena, and the pools of its request
  // and response types, which methods of the same types share). Counters of what the whole
  // strategy shares (its page pool) are 0 here: see MessageMemory::stats(). The default: zeros.
  virtual MemoryStats stats() const noexcept { return {}; }
  const google::protobuf::Message& request_prototype() const { return *request_prototype_; }
  const google::protobuf::Message& response_prototype() const { return *response_prototype_; }

 protected:
  MethodMemory(const google::protobuf::Message& request_prototype,
               const google::protobuf::Message& response_prototype)
      : request_prototype_(&request_prototype), response_prototype_(&response_prototype) {}
  // response_plain: see MessagePair::response_plain().
  MessagePair MakePair(google::protobuf::Message* request, google::protobuf::Message* response,
                       google::protobuf::Arena* arena, void* cookie,
                       bool response_plain = false) noexcept;
  // Called once per pair by MessagePair::Release().
  virtual void Release(google::protobuf::Message* request, google::protobuf::Message* response,
                       google::protobuf::Arena* arena, void* cookie) noexcept = 0;
  // MessagePair::ParseRequest(). The default merges `bytes` into the request (MergeSerialized).
  virtual ParseResult ParseRequest(google::protobuf::Message* request, void* cookie,
                                   SerializedMessage& bytes);
  // MessagePair::PrepareResponse(). The default does nothing.
  virtual void PrepareResponse(google::protobuf::Message* response, void* cookie) noexcept {}
  // MessagePair::held_bytes(). The default: the arena's SpaceAllocated(), or empty without one.
  virtual std::optional<uint64_t> HeldBytes(const google::protobuf::Message* request,
                                            const google::protobuf::Message* response,
                                            const google::protobuf::Arena* arena,
                                            void* cookie) const noexcept;

 private:
  friend class MessagePair;
  const google::protobuf::Message* request_prototype_;
  const google::protobuf::Message* response_prototype_;
};

class MessageMemory {
 public:
  virtual ~MessageMemory() = default;
  // "heap", "arena", "paged", "reuse" or "auto".
  virtual std::string_view name() const noexcept = 0;
  // Binds a method's request/response types. The prototypes must outlive the result.
  virtual std::unique_ptr<MethodMemory> Bind(
      const google::protobuf::Message& request_prototype,
      const google::protobuf::Message& response_prototype) = 0;
  virtual MemoryStats stats() const noexcept = 0;
  // Gives back what the strategy keeps between calls (pooled objects, cached pages) and no call
  // holds now; the next calls build it up again. The "auto" strategy calls it on a candidate no
  // method uses any more. Thread-safe; the default does nothing (nothing kept).
  virtual void Trim() noexcept {}
};

// Set-up functions (docs/api-conventions.md, "Errors"): invalid options make them return nullptr
// or -1 with a message naming the setting in *error (when `error` is not nullptr); they never
// throw std::invalid_argument (std::bad_alloc when memory runs out).
//
// Creates a built-in strategy.
std::shared_ptr<MessageMemory> MakeMessageMemory(MemoryMode mode, const MemoryOptions& options,
                                                 std::string* error);
// The same by name ("heap", "arena", "paged", "reuse", "auto"); an unknown name is an error that
// lists the valid ones.
std::shared_ptr<MessageMemory> MakeMessageMemory(std::string_view name,
                                                 const MemoryOptions& options, std::string* error);
// A built-in strategy with default options: cannot fail (nullptr only for a value cast into
// MemoryMode that is none of its enumerators).
std::shared_ptr<MessageMemory> MakeMessageMemory(MemoryMode mode);
// Validates options without building anything: 0, or -1.
int ValidateMemoryOptions(const MemoryOptions& options, std::string* error);
int ValidateArenaSettings(const ArenaSettings& settings, std::string* error);  // 0 < start <= max
int ValidateReuseSettings(const ReuseSettings& settings, std::string* error);  // bounds >= 1
int ValidateAutoSettings(const AutoSettings& settings, std::string* error);  // candidates, bounds

// The throwing spellings (std::invalid_argument naming the setting), deprecated for one release.
[[deprecated("use MakeMessageMemory(mode, options, &error)")]] std::shared_ptr<MessageMemory>
MakeMessageMemory(MemoryMode mode, const MemoryOptions& options);
[[deprecated("use MakeMessageMemory(name, options, &error)")]] std::shared_ptr<MessageMemory>
MakeMessageMemory(std::string_view name, const MemoryOptions& options = {});
[[deprecated("use ValidateMemoryOptions(options, &error)")]] void ValidateMemoryOptions(
    const MemoryOptions& options);
[[deprecated("use SetDefaultArenaSettings(settings, &error)")]] void SetDefaultArenaSettings(
    const ArenaSettings& settings);
[[deprecated("use ValidateArenaSettings(settings, &error)")]] void ValidateArenaSettings(
    const ArenaSettings& settings);
[[deprecated("use ValidateReuseSettings(settings, &error)")]] void ValidateReuseSettings(
    const ReuseSettings& settings);
[[deprecated("use ValidateAutoSettings(settings, &error)")]] void ValidateAutoSettings(
    const AutoSettings& settings);

}  // namespace arenarpc::memory
