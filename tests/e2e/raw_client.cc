#include "raw_client.h"

#include <poll.h>

#include <asio/connect.hpp>
#include <asio/write.hpp>

#include <gtest/gtest.h>

#include "protocol/meta_builder.h"
#include "protocol/payload_codec.h"

namespace arenarpc::e2e {

::testing::AssertionResult ParseReply(const RawReply& reply, google::protobuf::Message* response) {
  std::string detail;
  if (protocol::MergePayload(protocol::PayloadEncoding::Of(reply.frame.meta), reply.frame.payload,
                             reply.frame.attachment, response, &detail)) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "reply payload does not parse: " << detail;
}

RawClient::RawClient(int port) : socket_(context_) {
  asio::error_code error;
  socket_.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"),
                                          static_cast<uint16_t>(port)),
                  error);
  connected_ = !error;
}

void RawClient::SendBytes(std::string_view bytes) {
  asio::error_code ignored;  // the server may already have closed: tests check replies/closing
  asio::write(socket_, asio::buffer(bytes.data(), bytes.size()), ignored);
}

int64_t RawClient::Send(const RawRequest& request) {
  const int64_t correlation_id = next_correlation_id_++;
  SendBytes(Encode(request, correlation_id));
  return correlation_id;
}

std::string RawClient::Encode(const RawRequest& request, int64_t correlation_id) {
  net::BufferChain payload, attachment;
  attachment.Append(request.attachment);
  if (request.raw_payload) {
    payload.Append(*request.raw_payload);
  } else if (request.message != nullptr) {
    std::string error;
    if (!protocol::SerializePayload(*request.message, request.compress_type, &payload, &error,
                                    "request")) {
      ADD_FAILURE_AT(__FILE__, __LINE__);
    }
  }
  protocol::RpcMeta meta;
  if (!request.omit_request_meta) {
    protocol::RequestMetaFields call;
    call.service_name = request.service;
    call.method_name = request.method;
    call.correlation_id = correlation_id;
    call.log_id = request.log_id;
    call.user_fields = &request.user_fields;
    protocol::PayloadFields fields;
    fields.compress_type = request.compress_type;
    fields.attachment_size = attachment.size();
    std::string error;
    protocol::BuildRequestMeta(call, fields, payload, attachment, &meta, &error);
  } else {
    meta.set_correlation_id(correlation_id);
    if (!attachment.empty()) meta.set_attachment_size(static_cast<int32_t>(attachment.size()));
  }
  if (request.attachment_size) meta.set_attachment_size(*request.attachment_size);
  net::BufferChain frame;
  protocol::EncodeFrame(meta, std::move(payload), std::move(attachment), &frame);
  return frame.ToString();
}

bool RawClient::ReadMore(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return false;
  pollfd fd{socket_.native_handle(), POLLIN, 0};
  if (::poll(&fd, 1, static_cast<int>(left.count())) <= 0) return false;
  std::span<char> space = input_.PrepareWrite(4096);
  asio::error_code error;
  const size_t n = socket_.read_some(asio::buffer(space.data(), space.size()), error);
  if (error) {
    eof_ = true;
    return false;
  }
  input_.CommitWrite(n);
  return true;
}

bool RawClient::Read(RawReply* reply, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    protocol::Frame frame;
    switch (decoder_.Next(input_, &frame)) {
      case protocol::DecodeStatus::kFrame:
        reply->correlation_id = frame.meta.correlation_id();
        reply->error_code = frame.meta.response().error_code();
        reply->error_text = frame.meta.response().error_text();
        reply->compress_type = frame.meta.compress_type();
        reply->frame = std::move(frame);
        return true;
      case protocol::DecodeStatus::kHead:  // never: replies are read whole (no report_heads)
      case protocol::DecodeStatus::kError:
        return false;
      case protocol::DecodeStatus::kNeedMore:
        if (eof_ || !ReadMore(deadline)) return false;
        break;
    }
  }
}

bool RawClient::ReadFrameBytes(std::string* frame, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto buffered = [&](size_t n) {
    while (input_.size() < n) {
      if (eof_ || !ReadMore(deadline)) return false;
    }
    return true;
  };
  if (!buffered(12)) return false;
  unsigned char header[12];
  input_.CopyTo(header, sizeof(header));
  const std::string_view magic(reinterpret_cast<const char*>(header), 4);
  if (magic != "PRPC" && magic != "STRM") return false;
  const size_t body_size = (size_t{header[4]} << 24) | (size_t{header[5]} << 16) |
                           (size_t{header[6]} << 8) | size_t{header[7]};
  if (!buffered(12 + body_size)) return false;
  frame->resize(12 + body_size);
  input_.CopyTo(frame->data(), frame->size());
  input_.PopFront(frame->size());
  return true;
}

RawReply RawClient::Call(const RawRequest& request) {
  const int64_t correlation_id = Send(request);
  RawReply reply;
  if (!Read(&reply)) {
    ADD_FAILURE() << "no reply to call " << correlation_id;
    reply.error_code = -12345;
    return reply;
  }
  EXPECT_EQ(correlation_id, reply.correlation_id);
  return reply;
}

::testing::AssertionResult RawClient::WaitForClose(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!eof_ && input_.empty()) {
    if (!ReadMore(deadline) && !eof_) {
      return ::testing::AssertionFailure() << "still open after " << timeout.count() << " ms";
    }
  }
  if (!input_.empty()) {
    return ::testing::AssertionFailure()
           << input_.size() << " bytes arrived instead of the close: "
           << ::testing::PrintToString(input_.ToString().substr(0, 64));
  }
  return ::testing::AssertionSuccess();
}

void RawClient::Close() {
  asio::error_code ignored;
  socket_.close(ignored);
}

}  // namespace arenarpc::e2e
