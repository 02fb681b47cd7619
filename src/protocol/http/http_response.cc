#include "protocol/http/http_response.h"

#include <charconv>

#include "arenarpc/error_codes.h"

namespace arenarpc::protocol {

std::string_view HttpReasonPhrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 413:
      return "Payload Too Large";
    case 415:
      return "Unsupported Media Type";
    case 417:
      return "Expectation Failed";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 499:
      return "Client Closed Request";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Unknown";
  }
}

int HttpStatusForError(int error_code) {
  switch (error_code) {
    case ENOSERVICE:
    case ENOMETHOD:
      return 404;
    case EREQUEST:
      return 400;
    case ERPCAUTH:
      return 403;
    case ELIMIT:
    case EOVERCROWDED:
    case ELOGOFF:
      return 503;
    case ERPCTIMEDOUT:
      return 504;
    default:
      return 500;
  }
}

std::string HttpHeaderValue(std::string_view text) {
  std::string value(text);
  for (char& c : value) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return value;
}

namespace {

// The head with "Content-Length: body_size", or "Transfer-Encoding: chunked" when `chunked`.
void EncodeHead(const HttpResponseHead& head, bool chunked, size_t body_size,
                net::BufferChain* out) {
  std::string text;
  text.reserve(128);
  text += head.version_minor == 0 ? "HTTP/1.0 " : "HTTP/1.1 ";
  text += std::to_string(head.status);
  text += ' ';
  text += HttpReasonPhrase(head.status);
  text += "\r\nContent-Type: ";
  text += head.content_type;
  if (chunked) {
    text += "\r\nTransfer-Encoding: chunked\r\n";
  } else {
    text += "\r\nContent-Length: ";
    text += std::to_string(body_size);
    text += "\r\n";
  }
  if (!head.keep_alive) {
    text += "Connection: close\r\n";
  } else if (head.version_minor == 0) {
    text += "Connection: keep-alive\r\n";
  }
  for (const auto& [name, value] : head.headers) {
    text += name;
    text += ": ";
    text += value;
    text += "\r\n";
  }
  text += "\r\n";
  out->Append(text);
}

}  // namespace

void EncodeHttpHead(const HttpResponseHead& head, size_t body_size, net::BufferChain* out) {
  EncodeHead(head, /*chunked=*/false, body_size, out);
}

void EncodeChunkedHttpHead(const HttpResponseHead& head, net::BufferChain* out) {
  EncodeHead(head, /*chunked=*/true, 0, out);
}

void AppendHttpChunk(std::string_view data, net::BufferChain* out) {
  if (data.empty()) return;  // an empty chunk would end the body
  char size[20];
  const auto end = std::to_chars(size, size + sizeof(size), data.size(), 16).ptr;
  std::string text(size, end);
  text += "\r\n";
  text += data;
  text += "\r\n";
  out->Append(text);
}

std::string_view HttpLastChunk() { return "0\r\n\r\n"; }

void EncodeHttpResponse(const HttpResponseHead& head, std::string_view body,
                        net::BufferChain* out) {
  EncodeHttpHead(head, body.size(), out);
  out->Append(body);
}

std::string_view HttpContinueLine() { return "HTTP/1.1 100 Continue\r\n\r\n"; }

}  // namespace arenarpc::protocol
