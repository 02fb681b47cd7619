#pragma once
// HTTP/1.1 responses as bytes, and how brpc's error codes map to HTTP statuses.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "arenarpc/buffer_chain.h"

namespace arenarpc::protocol {

struct HttpResponseHead {
  int status = 200;
  std::string_view content_type = "text/plain; charset=utf-8";
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
  bool keep_alive = true;                                    // false: "Connection: close"
  int version_minor = 1;  // 0: answer as HTTP/1.0 ("Connection: keep-alive" when kept)
};

// Appends status line, headers (Content-Length = body_size) and the blank line.
void EncodeHttpHead(const HttpResponseHead& head, size_t body_size, net::BufferChain* out);
// A head whose body follows in chunks (Transfer-Encoding: chunked; HTTP/1.1): AppendHttpChunk()
// each piece, HttpLastChunk() at the end.
void EncodeChunkedHttpHead(const HttpResponseHead& head, net::BufferChain* out);
void AppendHttpChunk(std::string_view data, net::BufferChain* out);
std::string_view HttpLastChunk();
// Head + body.
void EncodeHttpResponse(const HttpResponseHead& head, std::string_view body, net::BufferChain* out);
// "HTTP/1.1 100 Continue\r\n\r\n"
std::string_view HttpContinueLine();

std::string_view HttpReasonPhrase(int status);
// brpc's mapping of an RPC error code to a status: ENOSERVICE/ENOMETHOD 404, EREQUEST 400,
// ERPCAUTH 403, ELIMIT/EOVERCROWDED/ELOGOFF 503, ERPCTIMEDOUT 504, anything else 500.
int HttpStatusForError(int error_code);
// A header value from arbitrary text: CR, LF and other control bytes become spaces.
std::string HttpHeaderValue(std::string_view text);

}  // namespace arenarpc::protocol
