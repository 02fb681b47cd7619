#pragma once
// OtlpHttpExporter: a SpanSink (arenarpc/rpcz.h) that sends rpcz's spans to an OpenTelemetry
// collector over OTLP/HTTP with JSON bodies (POST <url>, Content-Type: application/json), batched
// by a thread of its own. Bounded: spans wait in a queue of max_queued_spans; past it they are
// dropped and counted, as are the spans of a batch the collector refused or did not answer.
//
//   std::string error;
//   auto exporter = arenarpc::OtlpHttpExporter::Create(
//       {.url = "http://127.0.0.1:4318/v1/traces", .service_name = "catalog"}, &error);
//   if (!exporter) { ... error says why ... }
//   arenarpc::AddSpanSink(exporter);
//
// Plain HTTP only (a collector on the host or a sidecar); a span's attributes use OpenTelemetry's
// rpc.* and net.* names plus arenarpc.* for the memory strategy and bytes held
// (docs/observability.md).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "arenarpc/rpcz.h"

namespace arenarpc {

// A collector's OTLP/HTTP traces endpoint on the same host, its default port.
inline constexpr char kDefaultOtlpUrl[] = "http://127.0.0.1:4318/v1/traces";

struct OtlpExporterOptions {
  std::string url = kDefaultOtlpUrl;                    // http://host:port/path
  std::string service_name = "arenarpc";                // resource attribute service.name
  size_t max_queued_spans = 4096;
  size_t max_batch_spans = 512;
  std::chrono::milliseconds flush_interval{1000};  // a batch at least this often when spans wait
  std::chrono::milliseconds timeout{3000};         // connect + send + the collector's answer
};

class OtlpHttpExporter final : public SpanSink {
 public:
  // nullptr and *error when the options are invalid (a URL that is not http://host:port/path).
  static std::shared_ptr<OtlpHttpExporter> Create(OtlpExporterOptions options,
                                                  std::string* error);
  // Sends what is queued (each batch within `timeout`), then stops its thread.
  ~OtlpHttpExporter() override;

  void Export(const std::shared_ptr<const Span>& span) override;
  // Blocks until every span queued before the call was sent or dropped.
  void Flush();

  struct Counts {
    uint64_t exported = 0;          // accepted by the collector (a 2xx answer)
    uint64_t dropped_queue_full = 0;
    uint64_t dropped_failed = 0;    // in batches the collector refused or did not answer
    uint64_t failed_batches = 0;
  };
  Counts counts() const noexcept;
  // The last failure ("connect 127.0.0.1:4318: Connection refused", "HTTP 400 ..."); "" if none.
  std::string last_error() const;

 private:
  struct Target {
    std::string host, port, path;
  };
  OtlpHttpExporter(OtlpExporterOptions options, Target target);
  void Run();
  // One POST; true on a 2xx answer, else *error.
  bool Post(const std::string& body, std::string* error) const;

  const OtlpExporterOptions options_;
  const Target target_;
  mutable std::mutex mutex_;
  std::condition_variable wake_, flushed_;
  std::deque<std::shared_ptr<const Span>> queue_;
  uint64_t queued_total_ = 0, done_total_ = 0;  // Flush() waits for done_total_
  bool flush_wanted_ = false, stopping_ = false;
  std::string last_error_;
  std::atomic<uint64_t> exported_{0}, dropped_queue_full_{0}, dropped_failed_{0},
      failed_batches_{0};
  std::thread thread_;
};

// The OTLP/JSON body ("resourceSpans") of these spans: what OtlpHttpExporter posts.
std::string OtlpJson(const std::string& service_name,
                     const std::deque<std::shared_ptr<const Span>>& spans);

}  // namespace arenarpc
