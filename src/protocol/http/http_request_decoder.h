#pragma once
// HttpRequestDecoder: HTTP/1.x requests off a connection's input, on the nodejs http-parser.
// Bytes in, requests out; no sockets here.
//
// Bytes are cut off the input as soon as the parser has taken them (what a request needs is
// copied into it: target, headers, de-chunked body), so the input holds at most what the last read
// brought. The header block (request line + headers), the body, and all raw bytes of one request
// (framing and chunk extensions included: at most max_header_size + max_body_size +
// kRawSlackBytes) are bounded; past a bound, or on bytes that are not HTTP, the decoder fails for
// good with the status to answer (400, 413, 431, 417, 501). Pipelined requests come out one per
// Next(), in order.

#include <cstddef>
#include <memory>
#include <string>

#include "arenarpc/buffer_chain.h"
#include "protocol/http/http_request.h"

namespace arenarpc::protocol {

class HttpRequestDecoder {
 public:
  // http-parser's own bound on the header block (HTTP_MAX_HEADER_SIZE it was built with).
  static constexpr size_t kParserMaxHeaderSize = 80 * 1024;
  // Raw bytes of one request beyond its header block and body: chunk sizes, CRLFs, extensions.
  static constexpr size_t kRawSlackBytes = 64 * 1024;

  enum class Status {
    kNeedMore,        // no complete request buffered yet
    kRequest,         // one request was cut off the input into *out
    kExpectContinue,  // a request's headers asked "Expect: 100-continue" and its body may come:
                      // answer "100 Continue", then call Next() again
    kError,           // fatal: answer error_status() and close (error() says why)
  };

  HttpRequestDecoder(size_t max_header_size, size_t max_body_size);
  ~HttpRequestDecoder();
  HttpRequestDecoder(const HttpRequestDecoder&) = delete;
  HttpRequestDecoder& operator=(const HttpRequestDecoder&) = delete;

  Status Next(net::BufferChain& in, HttpRequest* out);

  // Bytes of a request that has not completed were taken (a read timeout applies).
  bool in_request() const noexcept { return request_bytes_ > 0; }
  int error_status() const noexcept { return error_status_; }
  const std::string& error() const noexcept { return error_; }

 private:
  struct Parser;
  friend struct Parser;
  Status Fail(int status, std::string why);

  const size_t max_header_size_;
  const size_t max_body_size_;
  std::unique_ptr<Parser> parser_;
  size_t request_bytes_ = 0;  // raw bytes of the request being parsed
  int error_status_ = 0;
  std::string error_;
};

}  // namespace arenarpc::protocol
