#pragma once
// Streams as observers (pages, stats) see them: one open stream (a brpc "STRM" stream or a gRPC
// streaming call) and one method's streams. Copies, taken by the server's StreamRegistry.

#include <cstdint>
#include <string>
#include <string_view>

namespace arenarpc::stats {

// kWeb: grpc-web or Connect server streaming over HTTP/1.1.
enum class StreamKind { kStrm, kGrpc, kWeb };

constexpr std::string_view StreamKindName(StreamKind kind) {
  switch (kind) {
    case StreamKind::kStrm: return "strm";
    case StreamKind::kGrpc: return "grpc";
    case StreamKind::kWeb: return "web";
  }
  return "?";
}

// Messages and bytes each way. Bytes are the messages' own bytes (STRM: the message as written;
// gRPC: the message after its 5-byte prefix, compressed when it travelled so), without framing.
struct StreamTraffic {
  uint64_t messages_in = 0, bytes_in = 0;    // from the peer
  uint64_t messages_out = 0, bytes_out = 0;  // to the peer
};

struct StreamInfo {
  uint64_t id = 0;  // STRM: this side's StreamId; gRPC: the HTTP/2 stream id
  StreamKind kind = StreamKind::kStrm;
  std::string method;  // full name
  uint64_t connection_id = 0;
  double age_seconds = 0;
  StreamTraffic traffic;
  // Received, not taken by the handler yet.
  uint64_t buffered_in_bytes = 0;
  // Written, not taken by the peer yet (STRM: not acknowledged by its FEEDBACK, or held before
  // the stream connected; gRPC: held for the client's flow-control windows).
  uint64_t buffered_out_bytes = 0;
};

// One method's streams: the open ones now, and every one since start.
struct MethodStreams {
  uint64_t open = 0;
  uint64_t opened = 0;       // since start
  StreamTraffic traffic;     // since start, open streams included
  uint64_t buffered_in_bytes = 0, buffered_out_bytes = 0;  // open streams
  double oldest_age_seconds = 0;                           // open streams; 0 when none
};

}  // namespace arenarpc::stats
