// Fuzzes the server's HTTP/2 + gRPC glue below the sockets (protocol/h2/grpc_server_session):
// whatever frames follow the client preface, arriving in arbitrary pieces, with the server
// answering the requests it pops (a reply, a refusal, or none) and shutting down midway. Checks
// the bounds the session promises: no message past the limit, header lists refused past theirs,
// no more open streams than SETTINGS_MAX_CONCURRENT_STREAMS allows, held bytes back to 0 once
// every stream is gone. With bit 0x40 of byte 1, paths of odd length are streaming calls: their
// messages are popped (within the limit) and echoed one by one, and the call finished at their end.
// Input: byte 0 chooses how the rest is chopped into reads, byte 1 how the server answers; the
// rest is what the client sends after the preface.
#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "protocol/h2/grpc_server_session.h"
#include "protocol/wire_protocol.h"

namespace {

using arenarpc::net::BufferChain;
using namespace arenarpc::protocol;

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t unit = (data[0] & 0x3f) + 1;
  const uint8_t answers = data[1];
  std::string bytes(kPreface);
  bytes.append(reinterpret_cast<const char*>(data + 2), size - 2);
  FUZZ_CHECK(RecognizeProtocol(std::string_view(bytes).substr(0, 24)) == WireProtocol::kHttp2);

  h2::GrpcServerSession::Limits limits;
  limits.max_concurrent_streams = 8;
  limits.max_header_list_bytes = 1024;
  limits.max_message_bytes = 4096;
  limits.request_bytes_budget = 65535;
  limits.stream_window = 16384;
  h2::GrpcServerSession session(limits);
  if ((answers & 0x40) != 0) {
    session.set_streaming_predicate([](std::string_view path) { return path.size() % 2 == 1; });
  }
  std::vector<int32_t> streaming;
  BufferChain out;
  size_t pos = 0, round = 0;
  while (pos < bytes.size()) {
    const size_t n = std::min(bytes.size() - pos, unit * (round++ % 4 + 1));
    if (!session.Receive(std::string_view(bytes).substr(pos, n))) {
      FUZZ_CHECK(!session.error().empty());
      break;
    }
    pos += n;
    FUZZ_CHECK(session.open_streams() <= limits.max_concurrent_streams + 1);
    h2::GrpcRequest request;
    while (session.PopRequest(&request)) {
      FUZZ_CHECK(request.message.size() <= limits.max_message_bytes);
      size_t header_bytes = 0;
      for (const auto& [name, value] : request.metadata) header_bytes += name.size() + value.size();
      FUZZ_CHECK(header_bytes <= limits.max_header_list_bytes);
      if (request.streaming) {
        FUZZ_CHECK(request.message.empty());
        streaming.push_back(request.stream_id);
        continue;
      }
      switch ((answers >> (round % 4 * 2)) & 3) {
        case 0:
          session.Respond(request.stream_id, std::move(request.message), false, request.metadata);
          break;
        case 1:
          session.Fail(request.stream_id, h2::GrpcStatus::kInternal, "fuzz \x01 failure");
          break;
        case 2:
          break;  // never answered
        case 3:
          session.Respond(request.stream_id, BufferChain(), true, {});
          session.Respond(request.stream_id, BufferChain(), false, {});  // a second one: dropped
          break;
      }
    }
    session.TakeReadable();
    for (auto it = streaming.begin(); it != streaming.end();) {
      BufferChain message;
      bool compressed = false;
      h2::GrpcServerSession::StreamInput input;
      while ((input = session.PopMessage(*it, &message, &compressed)) ==
             h2::GrpcServerSession::StreamInput::kMessage) {
        FUZZ_CHECK(message.size() <= limits.max_message_bytes);
        session.SendMessage(*it, std::move(message), compressed, {{"x-fuzz", "1"}});
      }
      if (input == h2::GrpcServerSession::StreamInput::kEnd) {
        session.FinishStream(*it, h2::GrpcStatus::kOk, "", {}, {{"x-trailer", "t"}});
        it = streaming.erase(it);
      } else {
        ++it;
      }
    }
    session.TakeCanceled();
    if (round == 3 && (answers & 0x80) != 0) session.Shutdown();
    session.TakeOutput(&out);
    session.TakeDrained();
    out.clear();
  }
  session.TakeOutput(&out);
  if (session.open_streams() == 0) FUZZ_CHECK(session.held_bytes() == 0);
  return 0;
}
