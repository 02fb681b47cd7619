#include "capture/capture_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <system_error>

#include "capture/dump_format.h"
#include <cstring>

namespace arenarpc::capture {
namespace {

// Bytes a record of this meta and request is charged in the queue.
size_t ChargeOf(const RpcDumpMeta& meta, size_t request_bytes) {
  return kRecordHeaderBytes + meta.ByteSizeLong() + request_bytes;
}

bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

CaptureWriter::CaptureWriter(const CaptureOptions& options)
    : options_(options), thread_([this] { Loop(); }) {}

CaptureWriter::~CaptureWriter() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    hold_ = false;
  }
  wake_.notify_all();
  thread_.join();
  if (fd_ >= 0) ::close(fd_);
}

bool CaptureWriter::Submit(RpcDumpMeta meta, std::string request) {
  const size_t bytes = ChargeOf(meta, request.size());
  return Queue(Pending{std::move(meta), std::move(request), {}, bytes});
}

bool CaptureWriter::Submit(RpcDumpMeta meta, net::BufferChain request) {
  const size_t bytes = ChargeOf(meta, std::max(request.size(), request.held_bytes()));
  return Queue(Pending{std::move(meta), {}, std::move(request), bytes});
}

bool CaptureWriter::Queue(Pending pending) {
  const size_t bytes = pending.bytes;
  std::lock_guard lock(mutex_);
  ++counters_.sampled;
  if (stop_ || bytes > kRecordHeaderBytes + kMaxRecordBodyBytes ||
      queue_.size() + in_batch_records_ >= static_cast<size_t>(options_.max_queued_records) ||
      queued_bytes_ + bytes > options_.max_queued_bytes) {
    ++counters_.dropped;
    return false;
  }
  queued_bytes_ += bytes;
  queue_.push_back(std::move(pending));
  if (queue_.size() == 1) wake_.notify_one();
  return true;
}

CaptureCounters CaptureWriter::counters() const {
  std::lock_guard lock(mutex_);
  CaptureCounters counters = counters_;
  counters.queued_records = queue_.size() + in_batch_records_;
  counters.queued_bytes = queued_bytes_;
  return counters;
}

std::vector<std::string> CaptureWriter::files() const {
  std::lock_guard lock(mutex_);
  return {files_.begin(), files_.end()};
}

bool CaptureWriter::Flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return progress_.wait_for(lock, timeout, [this] {
    return queue_.empty() && in_batch_records_ == 0;
  });
}

void CaptureWriter::HoldWrites(bool hold) {
  {
    std::lock_guard lock(mutex_);
    hold_ = hold;
  }
  wake_.notify_all();
}

void CaptureWriter::Loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || (!hold_ && !queue_.empty()); });
    if (queue_.empty()) {
      if (stop_) return;
      continue;
    }
    std::deque<Pending> batch;
    batch.swap(queue_);
    in_batch_records_ = batch.size();
    lock.unlock();
    WriteBatch(batch);
    size_t freed = 0;
    for (const Pending& pending : batch) freed += pending.bytes;
    lock.lock();
    queued_bytes_ -= freed;
    in_batch_records_ = 0;
    progress_.notify_all();
  }
}

int CaptureWriter::CurrentFile() {
  if (fd_ >= 0 && file_bytes_ < options_.max_file_bytes) return fd_;
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  std::error_code ec;
  std::filesystem::create_directories(options_.directory, ec);
  if (ec) {
    log_.Log("capture: cannot create directory " + options_.directory + ": " + ec.message());
    return -1;
  }
  // brpc's names: requests.YYYYmmdd_HHMMSS_uuuuuu, strictly increasing.
  int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  if (now_us <= last_file_us_) now_us = last_file_us_ + 1;
  const time_t seconds = static_cast<time_t>(now_us / 1000000);
  std::tm local{};
  localtime_r(&seconds, &local);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d_%H%M%S", &local);
  char name[64];
  std::snprintf(name, sizeof(name), "requests.%s_%06u", stamp,
                static_cast<unsigned>(now_us % 1000000));
  const std::string path = (std::filesystem::path(options_.directory) / name).string();
  {
    // Make room first: at most max_files files, this one included.
    std::unique_lock lock(mutex_);
    while (!files_.empty() && files_.size() >= static_cast<size_t>(options_.max_files)) {
      const std::string oldest = std::move(files_.front());
      files_.pop_front();
      lock.unlock();
      std::filesystem::remove(oldest, ec);
      lock.lock();
      ++counters_.files_deleted;
    }
  }
  const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    log_.Log("capture: cannot open " + path + ": " + std::strerror(errno));
    return -1;
  }
  last_file_us_ = now_us;
  fd_ = fd;
  file_bytes_ = 0;
  std::lock_guard lock(mutex_);
  files_.push_back(path);
  ++counters_.files_opened;
  return fd_;
}

void CaptureWriter::WriteBatch(std::deque<Pending>& batch) {
  std::string bytes;
  uint64_t written = 0, lost = 0, dropped = 0;
  for (Pending& pending : batch) {
    bytes.clear();
    const size_t request_size =
        pending.shared.empty() ? pending.request.size() : pending.shared.size();
    if (!AppendRecordHead(pending.meta, request_size, &bytes)) {
      ++dropped;
      continue;
    }
    if (pending.shared.empty()) {
      bytes.append(pending.request);
    } else {
      for (size_t i = 0; i < pending.shared.span_count(); ++i) {
        const std::span<const char> span = pending.shared.span(i);
        bytes.append(span.data(), span.size());
      }
    }
    const int fd = CurrentFile();
    if (fd < 0 || !WriteAll(fd, bytes)) {
      if (fd >= 0) {
        log_.Log(std::string("capture: write failed: ") + std::strerror(errno));
        ::close(fd_);
        fd_ = -1;
      }
      ++lost;
      continue;
    }
    file_bytes_ += bytes.size();
    ++written;
  }
  std::lock_guard lock(mutex_);
  counters_.written += written;
  counters_.write_errors += lost;
  counters_.dropped += dropped;
}

}  // namespace arenarpc::capture
