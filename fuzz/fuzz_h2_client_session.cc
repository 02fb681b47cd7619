// Fuzzes the client's HTTP/2 + gRPC glue below the sockets (protocol/h2/grpc_client_session):
// whatever a server sends, arriving in arbitrary pieces, while the client starts calls, cancels
// some and drains responses. Checks the bounds the session promises: held response bytes within
// budget + one message + streams x window, no message past the limit, no metadata past the header
// list limit, no more open streams than allowed, and nothing held or unsent once every call is
// answered or canceled. Odd calls are streaming: they send two messages and end their side, their
// response messages are released only on some rounds, and the bytes popped and not released stay
// within max_message_bytes + 5 + stream_window per stream.
// Input: byte 0 chooses how the rest is chopped into reads, byte 1 which calls start and which
// get canceled; the rest is what the server sends.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "protocol/h2/grpc_client_session.h"

namespace {

using arenarpc::net::BufferChain;
using namespace arenarpc::protocol;

h2::GrpcClientRequest Request(int i) {
  h2::GrpcClientRequest request;
  request.path = "/a.B/C";
  request.authority = "fuzz";
  if (i % 2 == 0) request.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(100);
  request.metadata = {{"x-i", std::to_string(i)}};
  request.message.Append(std::string(static_cast<size_t>(i) * 7, 'q'));
  return request;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t unit = (data[0] & 0x3f) + 1;
  const uint8_t script = data[1];
  const std::string_view bytes(reinterpret_cast<const char*>(data + 2), size - 2);

  h2::GrpcClientSession::Limits limits;
  limits.max_concurrent_streams = 4;
  limits.max_header_list_bytes = 1024;
  limits.max_message_bytes = 4096;
  limits.response_bytes_budget = 8192;
  limits.stream_window = 2048;
  h2::GrpcClientSession session(limits);
  const size_t bound = limits.response_bytes_budget + limits.max_message_bytes +
                       h2::kMessagePrefixSize +
                       limits.max_concurrent_streams * limits.stream_window;
  int started = 0;
  size_t unreleased[8] = {};
  const size_t stream_bound = limits.max_message_bytes + h2::kMessagePrefixSize + limits.stream_window;
  BufferChain out;
  size_t pos = 0, round = 0;
  while (pos < bytes.size()) {
    if (started < 8 && ((script >> (round % 8)) & 1) != 0) {
      const bool live = !session.goaway_received() && !session.failed();
      h2::GrpcClientRequest request = Request(started);
      if (started % 2 == 1) {
        request.streaming = true;
        request.message.clear();
      }
      session.Start(started, std::move(request));
      if (started % 2 == 1) {
        BufferChain message;
        message.Append("m");
        FUZZ_CHECK(session.Send(started, std::move(message), false) == live);
        FUZZ_CHECK(session.Send(started, BufferChain(), false) == live);
        FUZZ_CHECK(session.CloseSend(started) == live);
        FUZZ_CHECK(!session.CloseSend(started));
      }
      ++started;
    }
    if (round % 3 == 0) {  // the owner reads what it holds now
      for (int tag = 0; tag < 8; ++tag) {
        session.Release(tag, unreleased[tag]);
        unreleased[tag] = 0;
      }
    }
    if (round == 5 && (script & 0x80) != 0) session.Cancel(0);
    session.TakeOutput(&out);
    out.clear();
    session.TakeStarted();
    const size_t n = std::min(bytes.size() - pos, unit * (round++ % 4 + 1));
    if (!session.Receive(bytes.substr(pos, n))) {
      FUZZ_CHECK(session.failed() && !session.error().empty());
      break;
    }
    pos += n;
    FUZZ_CHECK(session.open_streams() <= limits.max_concurrent_streams);
    FUZZ_CHECK(session.held_response_bytes() <= bound);
    h2::GrpcStreamMessage message;
    while (session.PopMessage(&message)) {
      FUZZ_CHECK(message.tag >= 0 && message.tag < started && message.tag % 2 == 1);
      FUZZ_CHECK(message.message.size() <= limits.max_message_bytes);
      FUZZ_CHECK(message.wire_bytes == message.message.size() + h2::kMessagePrefixSize);
      unreleased[message.tag] += message.wire_bytes;
      FUZZ_CHECK(unreleased[message.tag] <= stream_bound);
    }
    h2::GrpcClientResponse response;
    while (session.PopResponse(&response)) {
      FUZZ_CHECK(response.tag >= 0 && response.tag < started);
      FUZZ_CHECK(response.message.size() <= limits.max_message_bytes);
      size_t header_bytes = 0;
      for (const auto& [name, value] : response.metadata) {
        header_bytes += name.size() + value.size();
      }
      FUZZ_CHECK(header_bytes <= limits.max_header_list_bytes);
      FUZZ_CHECK(response.error_code != 0 || response.grpc_status >= 0);
    }
  }
  session.TakeOutput(&out);
  if (session.open_streams() == 0 && !session.failed()) {
    h2::GrpcClientResponse response;
    while (session.PopResponse(&response)) {
    }
    FUZZ_CHECK(session.held_response_bytes() == 0);
  }
  return 0;
}
