#include "protocol/wire_protocol.h"

#include <array>

namespace arenarpc::protocol {

namespace {

// The request methods http-parser accepts that a client of an RPC server plausibly sends.
constexpr std::array<std::string_view, 9> kHttpMethods = {
    "GET ", "POST ", "PUT ", "HEAD ", "DELETE ", "OPTIONS ", "PATCH ", "TRACE ", "CONNECT "};
constexpr std::string_view kBaiduStdMagic = "PRPC";
constexpr std::string_view kHttp2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr std::string_view kStreamMagic = "STRM";  // baidu_std's streaming frames
constexpr size_t kLongestPrefix = kHttp2Preface.size();
constexpr char kTlsHandshakeRecord = 0x16;  // then the record's version: 3, 0..4

// `bytes` is `candidate`, or a shorter prefix of it (more bytes may still match).
bool Matches(std::string_view bytes, std::string_view candidate, bool* complete) {
  const size_t n = std::min(bytes.size(), candidate.size());
  if (bytes.substr(0, n) != candidate.substr(0, n)) return false;
  *complete = n == candidate.size();
  return true;
}

}  // namespace

WireProtocol RecognizeProtocol(std::string_view first_bytes) {
  if (first_bytes.empty()) return WireProtocol::kNeedMore;
  if (first_bytes[0] == kTlsHandshakeRecord) {
    if (first_bytes.size() >= 2 && first_bytes[1] != 3) return WireProtocol::kUnknown;
    if (first_bytes.size() < 3) return WireProtocol::kNeedMore;
    return first_bytes[2] <= 4 ? WireProtocol::kTls : WireProtocol::kUnknown;
  }
  bool complete = false;
  if (Matches(first_bytes, kBaiduStdMagic, &complete)) {
    return complete ? WireProtocol::kBaiduStd : WireProtocol::kNeedMore;
  }
  // A stream frame may come first (brpc answers one for an unknown stream with RST).
  if (Matches(first_bytes, kStreamMagic, &complete)) {
    return complete ? WireProtocol::kBaiduStd : WireProtocol::kNeedMore;
  }
  if (Matches(first_bytes, kHttp2Preface, &complete)) {
    return complete ? WireProtocol::kHttp2 : WireProtocol::kNeedMore;
  }
  bool partial = false;
  for (std::string_view method : kHttpMethods) {
    if (!Matches(first_bytes, method, &complete)) continue;
    if (complete) return WireProtocol::kHttp;
    partial = true;
  }
  return partial ? WireProtocol::kNeedMore : WireProtocol::kUnknown;
}

WireProtocol RecognizeProtocol(const net::BufferChain& input) {
  char head[kLongestPrefix];
  const size_t n = input.CopyTo(head, sizeof(head));
  return RecognizeProtocol(std::string_view(head, n));
}

}  // namespace arenarpc::protocol
