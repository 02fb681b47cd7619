#pragma once
// CaptureOptions: sampling live requests into rotating dump files (docs/capture.md), which
// arenarpc_press --replay plays back. Off unless `directory` is set (in ServerOptions::capture, or
// at Start() from the ARENARPC_CAPTURE environment variable).

#include <cstddef>
#include <cstdint>
#include <string>

namespace arenarpc {

struct CaptureOptions {
  // Where the dump files go (created if missing; files of an earlier run are left alone).
  // Empty = no capture.
  std::string directory;
  // Requests sampled per second, all protocols together; the rest are not looked at. 0..100000;
  // 0 = paused. Live: /flags/capture.samples_per_second?setvalue=N changes it while the server
  // runs (capture must be on, i.e. `directory` set, at Start()).
  int samples_per_second = 100;
  // A file is closed and a new one opened once it holds this many bytes (a record is never
  // split: a file may pass it by one record). >= 4096.
  size_t max_file_bytes = 64u << 20;
  // Files kept in the directory by this server: opening one more deletes its oldest. >= 1.
  int max_files = 16;
  // Records sampled but not yet written (the writer thread's queue), bounded both in records
  // and in bytes (request bytes + meta); a sample that would pass either is dropped and counted
  // (rpc_server_capture_dropped on /vars). The I/O thread never waits for the disk.
  int max_queued_records = 1024;
  size_t max_queued_bytes = 16u << 20;
  // Write authentication data (baidu_std authentication_data, HTTP's Authorization header, gRPC
  // `authorization` metadata). Off: they are left out of the record.
  bool include_credentials = false;
};

}  // namespace arenarpc
