#pragma once
// CaptureWriter: writes sampled records to rotating dump files on a thread of its own. Submit()
// never waits for the disk: it queues the record, or drops it (counted) when the queue holds
// max_queued_records records or max_queued_bytes bytes (CaptureOptions). Memory bound: the queue's
// bytes plus one batch being written, both within max_queued_bytes.
//
// Files are <directory>/requests.YYYYmmdd_HHMMSS_uuuuuu (local time the file was opened, made
// strictly increasing), brpc's names; a file is closed once it holds max_file_bytes, and opening
// one more than max_files deletes the oldest this writer opened.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/buffer_chain.h"
#include "arenarpc/capture_options.h"
#include "arenarpc/logging.h"
#include "capture/rpc_dump.pb.h"

namespace arenarpc::capture {

struct CaptureCounters {
  uint64_t sampled = 0;         // records submitted
  uint64_t written = 0;         // ... written to a file
  uint64_t dropped = 0;         // ... dropped: the queue was full, or the record too large
  uint64_t write_errors = 0;    // records lost to a failed open or write
  uint64_t files_opened = 0;
  uint64_t files_deleted = 0;   // oldest files removed for max_files
  uint64_t queued_records = 0;  // now, waiting for the writer
  uint64_t queued_bytes = 0;
};

class CaptureWriter {
 public:
  // Starts the writer thread. The options were validated (ValidateCaptureOptions).
  explicit CaptureWriter(const CaptureOptions& options);
  // Writes what is queued, closes the file and joins the thread.
  ~CaptureWriter();
  CaptureWriter(const CaptureWriter&) = delete;
  CaptureWriter& operator=(const CaptureWriter&) = delete;

  // Queues a record, or drops it: false. Any thread; never blocks on I/O.
  bool Submit(RpcDumpMeta meta, std::string request);
  // The same with the request's bytes shared, not copied (a large request: the I/O thread makes
  // no allocation of its size). Charged what the chain pins (held_bytes()), at least its size.
  bool Submit(RpcDumpMeta meta, net::BufferChain request);
  CaptureCounters counters() const;
  // Files this writer has open or kept, oldest first.
  std::vector<std::string> files() const;
  // Waits until everything submitted so far was written (or lost), at most `timeout`. true if so.
  bool Flush(std::chrono::milliseconds timeout);

  // Fault injection for tests: while held, the writer thread writes nothing (a stalled disk).
  void HoldWrites(bool hold);

 private:
  struct Pending {
    RpcDumpMeta meta;
    std::string request;
    net::BufferChain shared;  // instead of `request`, when submitted shared
    size_t bytes = 0;         // charged against max_queued_bytes
  };
  bool Queue(Pending pending);
  void Loop();
  // On the writer thread: the file the next record goes into; -1 if none could be opened.
  int CurrentFile();
  void WriteBatch(std::deque<Pending>& batch);

  const CaptureOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;      // the writer: records queued, stop, or hold released
  std::condition_variable progress_;  // Flush(): a batch done
  std::deque<Pending> queue_;
  size_t queued_bytes_ = 0;           // queue_ and the batch being written
  size_t in_batch_records_ = 0;
  bool stop_ = false;
  bool hold_ = false;
  CaptureCounters counters_;
  std::deque<std::string> files_;
  RateLimitedLog log_{1, LogLevel::kError};  // a failing disk says so once a second
  // The writer thread's own.
  int fd_ = -1;
  size_t file_bytes_ = 0;
  int64_t last_file_us_ = 0;
  std::thread thread_;  // last: started once the rest is set up
};

}  // namespace arenarpc::capture
