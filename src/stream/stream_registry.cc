#include "stream/stream_registry.h"

#include <algorithm>
#include <tuple>

namespace arenarpc::stream {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

stats::StreamTraffic TrafficOf(const StreamCounters& c) {
  stats::StreamTraffic t;
  t.messages_in = c.messages_in.load(kRelaxed);
  t.bytes_in = c.bytes_in.load(kRelaxed);
  t.messages_out = c.messages_out.load(kRelaxed);
  t.bytes_out = c.bytes_out.load(kRelaxed);
  return t;
}

void Add(stats::StreamTraffic& to, const stats::StreamTraffic& t) {
  to.messages_in += t.messages_in;
  to.bytes_in += t.bytes_in;
  to.messages_out += t.messages_out;
  to.bytes_out += t.bytes_out;
}

}  // namespace

StreamRegistry::Entry& StreamRegistry::Entry::operator=(Entry&& other) noexcept {
  if (this != &other) {
    Close();
    registry_ = std::move(other.registry_);
    record_ = std::move(other.record_);
  }
  return *this;
}

StreamCounters* StreamRegistry::Entry::counters() const noexcept {
  return record_ ? &record_->counters : nullptr;
}

std::shared_ptr<StreamCounters> StreamRegistry::Entry::shared_counters() const noexcept {
  return record_ ? std::shared_ptr<StreamCounters>(record_, &record_->counters) : nullptr;
}

void StreamRegistry::Entry::Close() {
  if (!registry_) return;
  registry_->Remove(record_);
  registry_.reset();  // the record stays: counters() may still be written
}

StreamRegistry::Entry StreamRegistry::Open(stats::StreamKind kind, uint64_t id,
                                           std::string_view method, uint64_t connection_id) {
  auto record = std::make_shared<Record>();
  record->kind = kind;
  record->id = id;
  record->method = std::string(method);
  record->connection_id = connection_id;
  record->opened_at = Clock::now();
  {
    std::lock_guard lock(mutex_);
    open_.emplace(record.get(), record);
    auto it = totals_.find(method);
    if (it == totals_.end()) it = totals_.emplace(std::string(method), Totals{}).first;
    ++it->second.opened;
  }
  Entry entry;
  entry.registry_ = shared_from_this();
  entry.record_ = std::move(record);
  return entry;
}

void StreamRegistry::Remove(const std::shared_ptr<Record>& record) {
  std::lock_guard lock(mutex_);
  if (open_.erase(record.get()) == 0) return;
  auto it = totals_.find(record->method);
  if (it != totals_.end()) Add(it->second.closed, TrafficOf(record->counters));
}

std::vector<stats::StreamInfo> StreamRegistry::Streams(Clock::time_point now) const {
  std::vector<stats::StreamInfo> out;
  {
    std::lock_guard lock(mutex_);
    out.reserve(open_.size());
    for (const auto& [key, record] : open_) {
      stats::StreamInfo info;
      info.id = record->id;
      info.kind = record->kind;
      info.method = record->method;
      info.connection_id = record->connection_id;
      info.age_seconds = std::chrono::duration<double>(now - record->opened_at).count();
      info.traffic = TrafficOf(record->counters);
      info.buffered_in_bytes = record->counters.buffered_in.load(kRelaxed);
      info.buffered_out_bytes = record->counters.buffered_out.load(kRelaxed);
      out.push_back(std::move(info));
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.connection_id, a.id) < std::tie(b.connection_id, b.id);
  });
  return out;
}

std::map<std::string, stats::MethodStreams, std::less<>> StreamRegistry::Methods(
    Clock::time_point now) const {
  std::map<std::string, stats::MethodStreams, std::less<>> out;
  std::lock_guard lock(mutex_);
  for (const auto& [method, totals] : totals_) {
    stats::MethodStreams& m = out[method];
    m.opened = totals.opened;
    m.traffic = totals.closed;
  }
  for (const auto& [key, record] : open_) {
    stats::MethodStreams& m = out[record->method];
    ++m.open;
    Add(m.traffic, TrafficOf(record->counters));
    m.buffered_in_bytes += record->counters.buffered_in.load(kRelaxed);
    m.buffered_out_bytes += record->counters.buffered_out.load(kRelaxed);
    m.oldest_age_seconds = std::max(
        m.oldest_age_seconds, std::chrono::duration<double>(now - record->opened_at).count());
  }
  return out;
}

}  // namespace arenarpc::stream
