#pragma once
// Which protocol a server connection speaks, told from its first bytes: "PRPC" (or "STRM", its
// streaming frames) is baidu_std, an HTTP method token followed by a space is HTTP/1.x, the
// connection preface is HTTP/2, a TLS handshake record (a ClientHello) is TLS (whose plaintext is
// recognised again). Bytes in, a verdict out; no sockets here.

#include <string_view>

#include "arenarpc/buffer_chain.h"

namespace arenarpc::protocol {

enum class WireProtocol {
  kNeedMore,  // the bytes so far are a prefix of more than one candidate (or of one): wait
  kBaiduStd,
  kHttp,
  kTls,  // a TLS record of type handshake (22), version 3.x
  kUnknown,  // no protocol starts like this: close the connection
  kHttp2,    // the HTTP/2 client connection preface (RFC 9113 §3.4)
};

// Looks at the first bytes of `input` (at most the HTTP/2 preface's 24).
WireProtocol RecognizeProtocol(const net::BufferChain& input);
WireProtocol RecognizeProtocol(std::string_view first_bytes);

}  // namespace arenarpc::protocol
