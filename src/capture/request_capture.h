#pragma once
// RequestCapture: what a server holds while capture is on — the per-second sample budget and the
// writer. The protocols ask Sample() for every call they admit (cheap once the second's budget is
// spent) and Submit() the record of a sampled one.

#include <chrono>
#include <string>

#include "arenarpc/capture_options.h"
#include "capture/capture_writer.h"
#include "util/sample_budget.h"

namespace arenarpc::capture {

class RequestCapture {
 public:
  explicit RequestCapture(const CaptureOptions& options)
      : budget_(options.samples_per_second),
        include_credentials_(options.include_credentials),
        writer_(options) {}

  bool Sample() noexcept { return budget_.Take(std::chrono::steady_clock::now()); }
  // The live setting capture.samples_per_second: any thread; 0 pauses sampling.
  int samples_per_second() const noexcept { return budget_.per_second(); }
  void set_samples_per_second(int per_second) noexcept { budget_.set_per_second(per_second); }
  bool include_credentials() const noexcept { return include_credentials_; }
  // Stamps the record with the wall clock and queues it (or drops it, counted).
  // `Request`: std::string, or net::BufferChain for bytes shared rather than copied.
  template <typename Request>
  void Submit(RpcDumpMeta meta, Request request) {
    meta.set_captured_at_us(std::chrono::duration_cast<std::chrono::microseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count());
    writer_.Submit(std::move(meta), std::move(request));
  }
  CaptureWriter& writer() noexcept { return writer_; }
  const CaptureWriter& writer() const noexcept { return writer_; }

 private:
  util::SampleBudget budget_;
  const bool include_credentials_;
  CaptureWriter writer_;
};

}  // namespace arenarpc::capture
