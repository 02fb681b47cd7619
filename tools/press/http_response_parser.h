#pragma once
// HttpResponseParser: HTTP/1.1 responses out of a byte stream (pipelined responses, chunked or
// Content-Length bodies), on Debian's nodejs http-parser. Used by arenarpc_press's HTTP+JSON
// transport and by its /vars reader.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace arenarpc::press {

struct HttpResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, in order
  std::string body;
  bool keep_alive = true;  // false: the server closes the connection after this response

  // The first header of that (lower-case) name, or nullptr.
  const std::string* Header(std::string_view lower_name) const;
};

class HttpResponseParser {
 public:
  // A body larger than max_body_bytes is an error (bounded client memory).
  explicit HttpResponseParser(size_t max_body_bytes = size_t{64} << 20);
  ~HttpResponseParser();
  HttpResponseParser(const HttpResponseParser&) = delete;
  HttpResponseParser& operator=(const HttpResponseParser&) = delete;

  // Parses the next bytes of the stream; responses completed by them are appended to *out.
  // Returns false when the stream is not valid HTTP (error() says why); the parser then stays
  // failed until Reset().
  bool Feed(std::string_view bytes, std::vector<HttpResponse>* out);
  // The peer closed the connection: completes a response whose body ends at EOF. False when a
  // response was cut short (error() says so).
  bool FeedEof(std::vector<HttpResponse>* out);
  // True between the first byte of a response and its end.
  bool InsideResponse() const;
  const std::string& error() const { return error_; }
  void Reset();  // a new connection

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::string error_;
};

}  // namespace arenarpc::press
