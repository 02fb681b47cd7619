#pragma once
// StreamRegistry: a server's open streams (brpc "STRM" streams it accepted and its gRPC streaming
// calls) for the pages, and each method's totals since start. A stream registers when it opens
// and leaves when it closes (one short lock each); its traffic is counted in its StreamCounters
// without the registry. Observers get copies (one short lock).

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "stats/stream_info.h"
#include "stream/stream_counters.h"

namespace arenarpc::stream {

class StreamRegistry : public std::enable_shared_from_this<StreamRegistry> {
  struct Record;

 public:
  using Clock = std::chrono::steady_clock;

  // One open stream: registered while it lives (or until Close()). Empty: not registered.
  class Entry {
   public:
    Entry() = default;
    Entry(Entry&&) noexcept = default;
    Entry& operator=(Entry&& other) noexcept;
    ~Entry() { Close(); }
    // Null when empty; stays valid after Close() while the entry lives.
    StreamCounters* counters() const noexcept;
    // The same counters, for code that may outlive the entry.
    std::shared_ptr<StreamCounters> shared_counters() const noexcept;
    // The stream closed: leaves the open streams, its traffic goes to its method's totals.
    void Close();

   private:
    friend class StreamRegistry;
    std::shared_ptr<StreamRegistry> registry_;
    std::shared_ptr<Record> record_;
  };

  // `id`: the stream's id as its peer knows it (stats::StreamInfo::id).
  Entry Open(stats::StreamKind kind, uint64_t id, std::string_view method,
             uint64_t connection_id);

  // Open streams, by connection then id.
  std::vector<stats::StreamInfo> Streams(Clock::time_point now) const;
  // Every method that had a stream, by full name.
  std::map<std::string, stats::MethodStreams, std::less<>> Methods(Clock::time_point now) const;

 private:
  struct Record {
    StreamCounters counters;
    stats::StreamKind kind;
    uint64_t id;
    std::string method;
    uint64_t connection_id;
    Clock::time_point opened_at;
  };
  struct Totals {
    uint64_t opened = 0;
    stats::StreamTraffic closed;  // streams that closed
  };
  void Remove(const std::shared_ptr<Record>& record);

  mutable std::mutex mutex_;
  std::map<const Record*, std::shared_ptr<Record>> open_;
  std::map<std::string, Totals, std::less<>> totals_;
};

}  // namespace arenarpc::stream
