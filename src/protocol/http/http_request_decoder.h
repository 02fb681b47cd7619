#pragma once
// HttpRequestDecoder: HTTP/1.x requests off a connection's input, on the nodejs http-parser.
// Bytes in, requests out; no sockets here.
//
// A request's bytes stay in the input chain until the whole request has been parsed (so a
// connection's read timeout sees a request that is still arriving); they are cut off at once
// then. The header block (request line + headers) and the body are bounded; past a bound, or on
// bytes that are not HTTP, the decoder fails for good with the status to answer (400, 413, 431,
// 417, 501). Pipelined requests come out one per Next(), in order.

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

  int error_status() const noexcept { return error_status_; }
  const std::string& error() const noexcept { return error_; }

 private:
  struct Parser;
  friend struct Parser;
  Status Fail(int status, std::string why);

  const size_t max_header_size_;
  const size_t max_body_size_;
  std::unique_ptr<Parser> parser_;
  size_t fed_ = 0;  // bytes at the front of the input already given to the parser
  int error_status_ = 0;
  std::string error_;
};

}  // namespace arenarpc::protocol
