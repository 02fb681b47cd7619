#pragma once
// RawClient: a blocking baidu_std client on a plain socket, built on the protocol layer. It writes
// exactly the bytes a test asks for (including malformed ones) and reads reply frames.

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <google/protobuf/message.h>
#include <gtest/gtest.h>

#include "arenarpc/buffer_chain.h"
#include "protocol/frame_codec.h"

namespace arenarpc::e2e {

struct RawRequest {
  std::string service = "arenarpc.e2e.TestService";
  std::string method = "Echo";
  const google::protobuf::Message* message = nullptr;
  std::optional<std::string> raw_payload;   // sent instead of the serialized message
  int compress_type = 0;
  std::string attachment;
  std::optional<int32_t> attachment_size;   // overrides the real attachment size
  std::map<std::string, std::string> user_fields;
  int64_t log_id = 0;
  bool omit_request_meta = false;           // a meta without `request` (e.g. a reply frame)
};

inline RawRequest RequestFor(const google::protobuf::Message* message) {
  RawRequest request;
  request.message = message;
  return request;
}

struct RawReply {
  int64_t correlation_id = 0;
  int error_code = 0;
  std::string error_text;
  int compress_type = 0;
  protocol::Frame frame;  // payload still as on the wire
};

// Parses a successful reply's payload (decompressing it); reports the reason on failure.
::testing::AssertionResult ParseReply(const RawReply& reply, google::protobuf::Message* response);

class RawClient {
 public:
  explicit RawClient(int port);
  bool connected() const { return connected_; }
  int64_t next_correlation_id() const { return next_correlation_id_; }

  // The frame Send() would write for this request and correlation id.
  static std::string Encode(const RawRequest& request, int64_t correlation_id);
  void SendBytes(std::string_view bytes);
  // Encodes and sends one request frame; returns its correlation id.
  int64_t Send(const RawRequest& request);
  // Next reply frame; false on timeout, EOF or a framing error.
  bool Read(RawReply* reply, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Next frame exactly as on the wire (12-byte header, meta, payload, attachment; "PRPC" or
  // "STRM"); false on timeout, EOF or a header that is not baidu_std's.
  bool ReadFrameBytes(std::string* frame,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Send + Read; the reply must carry the request's correlation id.
  RawReply Call(const RawRequest& request);
  // Succeeds if the server closes the connection within `timeout` without sending one more byte
  // (nothing unread from before, nothing arriving): a reply before the close fails it.
  ::testing::AssertionResult WaitForClose(
      std::chrono::milliseconds timeout = std::chrono::seconds(10));
  void Close();

 private:
  // Reads what is available within `timeout`; false on timeout; sets eof_ on EOF/error.
  bool ReadMore(std::chrono::steady_clock::time_point deadline);

  asio::io_context context_;
  asio::ip::tcp::socket socket_;
  bool connected_ = false;
  bool eof_ = false;
  net::BufferChain input_;
  protocol::FrameDecoder decoder_;
  int64_t next_correlation_id_ = 1;
};

}  // namespace arenarpc::e2e
