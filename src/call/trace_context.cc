#include "arenarpc/trace_context.h"

#include <array>
#include <charconv>
#include <optional>
#include <random>

#include "arenarpc/fiber.h"
#include "call/span_record.h"
#include "util/hex.h"

namespace arenarpc {
namespace {

uint64_t NewId() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  uint64_t id = 0;
  while (id == 0) id = engine();  // 0 means "none" on every protocol
  return id;
}

// The current context of one fiber (or thread): a copy the slot owns (a handler's, which must
// outlive its Controller: the handler may go on after done->Run()) or a ScopedTrace's.
struct CurrentSlot {
  std::optional<TraceContext> owned;
  const TraceContext* current = nullptr;
  std::shared_ptr<internal::SpanRecord> span;  // the handler's rpcz span, when sampled
};

const char kSlotKey = 0;

CurrentSlot* FindSlot() noexcept {
  return static_cast<CurrentSlot*>(fiber::detail::GetLocal(&kSlotKey));
}

CurrentSlot& Slot() {
  if (CurrentSlot* slot = FindSlot()) return *slot;
  auto* slot = new CurrentSlot;
  fiber::detail::SetLocal(&kSlotKey, slot, [](void* p) { delete static_cast<CurrentSlot*>(p); });
  return *slot;
}

bool ParseHex(std::string_view text, uint64_t* value) {
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;  // lower-case only
  }
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value, 16);
  return error == std::errc() && end == text.data() + text.size();
}

}  // namespace

TraceContext TraceContext::Child() const {
  TraceContext child = *this;
  child.parent_span_id = span_id;
  child.span_id = NewId();
  return child;
}

TraceContext TraceContext::NewRoot() {
  TraceContext root;
  root.trace_id_high = NewId();
  root.trace_id = NewId();
  root.span_id = NewId();
  root.flags = 1;
  return root;
}

std::optional<TraceContext> ParseTraceparent(std::string_view header) {
  // version "-" trace-id "-" parent-id "-" flags, 2+1+32+1+16+1+2 = 55 characters
  constexpr size_t kLength = 55;
  if (header.size() < kLength) return std::nullopt;
  uint64_t version = 0;
  if (!ParseHex(header.substr(0, 2), &version) || version == 0xff) return std::nullopt;
  if (header[2] != '-' || header[35] != '-' || header[52] != '-') return std::nullopt;
  // Version 00 has exactly these fields; a later version may add more after a '-'.
  if (header.size() > kLength && (version == 0 || header[kLength] != '-')) return std::nullopt;
  TraceContext context;
  uint64_t flags = 0;
  if (!ParseHex(header.substr(3, 16), &context.trace_id_high) ||
      !ParseHex(header.substr(19, 16), &context.trace_id) ||
      !ParseHex(header.substr(36, 16), &context.parent_span_id) ||
      !ParseHex(header.substr(53, 2), &flags)) {
    return std::nullopt;
  }
  if (!context.valid() || context.parent_span_id == 0) return std::nullopt;
  context.flags = static_cast<uint8_t>(flags);
  context.span_id = NewId();
  return context;
}

std::string FormatTraceparent(const TraceContext& context) {
  std::string header;
  header.reserve(55);
  header.append("00-");
  util::AppendHex(&header, context.trace_id_high, 16);
  util::AppendHex(&header, context.trace_id, 16);
  header.push_back('-');
  util::AppendHex(&header, context.span_id, 16);
  header.push_back('-');
  util::AppendHex(&header, context.flags, 2);
  return header;
}

const TraceContext* CurrentTrace() noexcept {
  const CurrentSlot* slot = FindSlot();
  return slot != nullptr ? slot->current : nullptr;
}

ScopedTrace::ScopedTrace(const TraceContext& context) : context_(context) {
  CurrentSlot& slot = Slot();
  previous_ = slot.current;
  slot.current = &context_;
}

ScopedTrace::~ScopedTrace() { Slot().current = previous_; }

namespace internal {

// A handler starts on its own fiber: its call's context is current until the fiber ends.
void SetHandlerTrace(const TraceContext& context) {
  CurrentSlot& slot = Slot();
  slot.owned = context;
  slot.current = &*slot.owned;
}

void SetHandlerSpan(std::shared_ptr<SpanRecord> span) { Slot().span = std::move(span); }

SpanRecord* CurrentSpan() noexcept {
  const CurrentSlot* slot = FindSlot();
  return slot != nullptr ? slot->span.get() : nullptr;
}

}  // namespace internal
}  // namespace arenarpc
