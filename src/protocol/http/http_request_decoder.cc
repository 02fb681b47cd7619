#include "protocol/http/http_request_decoder.h"

#include <http_parser.h>

#include <algorithm>
#include <cctype>
#include <unordered_set>

namespace arenarpc::protocol {

namespace {

// Header names are ASCII tokens; no locale lookups per byte.
char AsciiLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

// The parser and the request it is filling. Callbacks find it through http_parser::data.
struct HttpRequestDecoder::Parser {
  explicit Parser(HttpRequestDecoder* owner) : decoder(owner) {
    http_parser_init(&parser, HTTP_REQUEST);
    parser.data = this;
  }

  HttpRequestDecoder* decoder;
  http_parser parser;
  HttpRequest request;
  std::string field;           // the header name being read
  bool reading_value = false;  // the last header callback was a value
  size_t header_bytes = 0;
  bool message_done = false;
  bool headers_done = false;
  bool continue_pending = false;
  int limit_status = 0;  // set by a callback that stopped the parser over a limit
  std::string limit_error;

  void Reset() {
    request = HttpRequest{};
    field.clear();
    reading_value = false;
    header_bytes = 0;
    message_done = headers_done = continue_pending = false;
  }

  static Parser& Of(http_parser* p) { return *static_cast<Parser*>(p->data); }

  // Counts header-block bytes; false (stop) past the limit.
  bool CountHeader(size_t n) {
    header_bytes += n;
    if (header_bytes <= decoder->max_header_size_) return true;
    limit_status = 431;
    limit_error = "the request line and headers exceed max_http_header_size=" +
                  std::to_string(decoder->max_header_size_) + " bytes";
    return false;
  }

  static int OnUrl(http_parser* p, const char* at, size_t n) {
    Parser& self = Of(p);
    if (!self.CountHeader(n)) return 1;
    self.request.target.append(at, n);
    return 0;
  }
  static int OnHeaderField(http_parser* p, const char* at, size_t n) {
    Parser& self = Of(p);
    if (!self.CountHeader(n + 4)) return 1;  // ": " and CRLF
    if (self.reading_value) {
      self.reading_value = false;
      self.field.clear();
    }
    const size_t start = self.field.size();
    self.field.append(at, n);
    for (size_t i = start; i < self.field.size(); ++i) self.field[i] = AsciiLower(self.field[i]);
    return 0;
  }
  static int OnHeaderValue(http_parser* p, const char* at, size_t n) {
    Parser& self = Of(p);
    if (!self.CountHeader(n)) return 1;
    if (!self.reading_value) {
      self.reading_value = true;
      self.request.headers.emplace_back(self.field, std::string());
      constexpr std::string_view kConnectProtocol = "connect-protocol-version";
      if (self.field.size() == kConnectProtocol.size() && self.field == kConnectProtocol) {
        self.request.connect_protocol = true;
      }
    }
    self.request.headers.back().second.append(at, n);
    return 0;
  }
  static int OnHeadersComplete(http_parser* p);
  static int OnBody(http_parser* p, const char* at, size_t n) {
    Parser& self = Of(p);
    if (self.request.body.size() + n > self.decoder->max_body_size_) {
      self.limit_status = 413;
      self.limit_error =
          "the body exceeds max_body_size=" + std::to_string(self.decoder->max_body_size_) +
          " bytes";
      return 1;
    }
    self.request.body.append(at, n);
    return 0;
  }
  static int OnMessageComplete(http_parser* p) {
    Of(p).message_done = true;
    http_parser_pause(p, 1);  // one request per Next()
    return 0;
  }

  static const http_parser_settings& Settings() {
    static const http_parser_settings settings = [] {
      http_parser_settings s;
      http_parser_settings_init(&s);
      s.on_url = &OnUrl;
      s.on_header_field = &OnHeaderField;
      s.on_header_value = &OnHeaderValue;
      s.on_headers_complete = &OnHeadersComplete;
      s.on_body = &OnBody;
      s.on_message_complete = &OnMessageComplete;
      return s;
    }();
    return settings;
  }
};

namespace {

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return AsciiLower(x) == AsciiLower(y);
         });
}

}  // namespace

// Path and query of the request target. The usual origin form ("/path?query") is split here;
// anything else (absolute form, "*") goes through http-parser's URL parser.
bool SplitTarget(HttpRequest& request) {
  const std::string_view target = request.target;
  if (!target.empty() && target[0] == '/') {
    const size_t end = target.find_first_of("?#");
    request.path = PercentDecode(target.substr(0, end), false);
    if (end != std::string_view::npos && target[end] == '?') {
      const size_t fragment = target.find('#', end);
      request.query = std::string(target.substr(end + 1, fragment - end - 1));
    }
    return true;
  }
  http_parser_url url;
  http_parser_url_init(&url);
  if (http_parser_parse_url(target.data(), target.size(), 0, &url) != 0) return false;
  request.path =
      (url.field_set & (1 << UF_PATH))
          ? PercentDecode(target.substr(url.field_data[UF_PATH].off, url.field_data[UF_PATH].len),
                          false)
          : "/";
  if (url.field_set & (1 << UF_QUERY)) {
    request.query =
        std::string(target.substr(url.field_data[UF_QUERY].off, url.field_data[UF_QUERY].len));
  }
  return true;
}

// on_headers_complete's 1 and 2 mean "no body" to http-parser; any other non-zero value stops it.
constexpr int kStop = -1;

int HttpRequestDecoder::Parser::OnHeadersComplete(http_parser* p) {
  Parser& self = Of(p);
  HttpRequest& request = self.request;
  self.headers_done = true;
  request.method = http_method_str(static_cast<http_method>(p->method));
  request.version_major = p->http_major;
  request.version_minor = p->http_minor;
  request.keep_alive = http_should_keep_alive(p) != 0;
  if (p->upgrade) {
    self.limit_status = 501;
    self.limit_error = "protocol upgrades (and CONNECT) are not supported";
    return kStop;
  }
  if (!SplitTarget(request)) {
    self.limit_status = 400;
    self.limit_error = "invalid request target";
    return kStop;
  }
  // content_length is ULLONG_MAX when there is no Content-Length header.
  const bool has_length = p->content_length != ULLONG_MAX;
  if (has_length && p->content_length > self.decoder->max_body_size_) {
    self.limit_status = 413;
    self.limit_error = "Content-Length " + std::to_string(p->content_length) +
                       " exceeds max_body_size=" + std::to_string(self.decoder->max_body_size_);
    return kStop;
  }
  if (const std::string* expect = request.Header("expect")) {
    if (!EqualsNoCase(*expect, "100-continue")) {
      self.limit_status = 417;
      self.limit_error = "Expect: " + *expect + " is not supported";
      return kStop;
    }
    const bool body_follows = (p->flags & F_CHUNKED) || (has_length && p->content_length > 0);
    if (body_follows && request.version_minor >= 1) {
      self.continue_pending = true;
      http_parser_pause(p, 1);
    }
  }
  return 0;
}

HttpRequestDecoder::HttpRequestDecoder(size_t max_header_size, size_t max_body_size)
    : max_header_size_(max_header_size),
      max_body_size_(max_body_size),
      parser_(std::make_unique<Parser>(this)) {}

HttpRequestDecoder::~HttpRequestDecoder() = default;

HttpRequestDecoder::Status HttpRequestDecoder::Fail(int status, std::string why) {
  error_status_ = status;
  error_ = std::move(why);
  return Status::kError;
}

HttpRequestDecoder::Status HttpRequestDecoder::Next(net::BufferChain& in, HttpRequest* out) {
  if (error_status_ != 0) return Status::kError;
  Parser& p = *parser_;
  const size_t max_request_bytes = max_header_size_ + max_body_size_ + kRawSlackBytes;
  // Feed the input span by span, cutting off what the parser took, until a request completes or
  // a pause. The callbacks copied what the request needs.
  while (!in.empty()) {
    const std::span<const char> span = in.span(0);
    const size_t parsed = http_parser_execute(&p.parser, &Parser::Settings(), span.data(),
                                              span.size());
    in.PopFront(parsed);
    request_bytes_ += parsed;
    const auto error = static_cast<http_errno>(p.parser.http_errno);
    if (error == HPE_PAUSED) {
      http_parser_pause(&p.parser, 0);
      if (p.continue_pending && !p.message_done) {
        p.continue_pending = false;
        return Status::kExpectContinue;
      }
      if (p.message_done) {
        request_bytes_ = 0;
        *out = std::move(p.request);
        p.Reset();
        return Status::kRequest;
      }
      continue;
    }
    if (error != HPE_OK) {
      if (p.limit_status != 0) return Fail(p.limit_status, std::move(p.limit_error));
      if (error == HPE_HEADER_OVERFLOW) {
        return Fail(431, "the request line and headers exceed " +
                             std::to_string(kParserMaxHeaderSize) + " bytes");
      }
      return Fail(400, std::string("malformed HTTP request: ") + http_errno_description(error));
    }
    if (parsed != span.size()) return Fail(400, "malformed HTTP request");
    if (request_bytes_ > max_request_bytes) {
      return Fail(p.headers_done ? 413 : 431,
                  "the request's raw bytes (framing and chunk extensions included) exceed "
                  "max_http_header_size + max_body_size + " +
                      std::to_string(kRawSlackBytes) + " = " + std::to_string(max_request_bytes));
    }
  }
  return Status::kNeedMore;
}

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string PercentDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%' && i + 2 < text.size()) {
      const int hi = HexValue(text[i + 1]), lo = HexValue(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_is_space && c == '+' ? ' ' : c);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> ParseQuery(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::unordered_set<std::string> seen;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    std::string key = PercentDecode(item.substr(0, eq), true);
    if (!seen.insert(key).second) continue;
    std::string value =
        eq == std::string_view::npos ? std::string() : PercentDecode(item.substr(eq + 1), true);
    pairs.emplace_back(std::move(key), std::move(value));
  }
  return pairs;
}

}  // namespace arenarpc::protocol
