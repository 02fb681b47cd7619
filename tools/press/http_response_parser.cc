#include "press/http_response_parser.h"

#include <http_parser.h>

#include <algorithm>
#include <cctype>

namespace arenarpc::press {

struct HttpResponseParser::State {
  http_parser parser;
  size_t max_body_bytes = 0;
  bool inside = false;
  bool last_was_value = false;
  bool body_too_large = false;
  HttpResponse current;
  std::vector<HttpResponse>* out = nullptr;

  static State& Of(http_parser* p) { return *static_cast<State*>(p->data); }

  static int OnMessageBegin(http_parser* p) {
    State& s = Of(p);
    s.inside = true;
    s.last_was_value = false;
    s.current = HttpResponse();
    return 0;
  }
  static int OnHeaderField(http_parser* p, const char* at, size_t n) {
    State& s = Of(p);
    if (s.last_was_value || s.current.headers.empty()) s.current.headers.emplace_back();
    s.last_was_value = false;
    std::string& name = s.current.headers.back().first;
    for (size_t i = 0; i < n; ++i) {
      name += static_cast<char>(std::tolower(static_cast<unsigned char>(at[i])));
    }
    return 0;
  }
  static int OnHeaderValue(http_parser* p, const char* at, size_t n) {
    State& s = Of(p);
    s.last_was_value = true;
    s.current.headers.back().second.append(at, n);
    return 0;
  }
  static int OnBody(http_parser* p, const char* at, size_t n) {
    State& s = Of(p);
    if (s.current.body.size() + n > s.max_body_bytes) {
      s.body_too_large = true;
      return 1;  // stops the parser
    }
    s.current.body.append(at, n);
    return 0;
  }
  static int OnMessageComplete(http_parser* p) {
    State& s = Of(p);
    s.current.status = static_cast<int>(p->status_code);
    s.current.keep_alive = http_should_keep_alive(p) != 0;
    s.out->push_back(std::move(s.current));
    s.current = HttpResponse();
    s.inside = false;
    return 0;
  }

  static const http_parser_settings& Settings() {
    static const http_parser_settings settings = [] {
      http_parser_settings st;
      http_parser_settings_init(&st);
      st.on_message_begin = &OnMessageBegin;
      st.on_header_field = &OnHeaderField;
      st.on_header_value = &OnHeaderValue;
      st.on_body = &OnBody;
      st.on_message_complete = &OnMessageComplete;
      return st;
    }();
    return settings;
  }
};

const std::string* HttpResponse::Header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return &value;
  }
  return nullptr;
}

HttpResponseParser::HttpResponseParser(size_t max_body_bytes) : state_(std::make_unique<State>()) {
  state_->max_body_bytes = max_body_bytes;
  Reset();
}

HttpResponseParser::~HttpResponseParser() = default;

void HttpResponseParser::Reset() {
  http_parser_init(&state_->parser, HTTP_RESPONSE);
  state_->parser.data = state_.get();
  state_->inside = false;
  state_->body_too_large = false;
  state_->current = HttpResponse();
  error_.clear();
}

bool HttpResponseParser::InsideResponse() const { return state_->inside; }

bool HttpResponseParser::Feed(std::string_view bytes, std::vector<HttpResponse>* out) {
  if (!error_.empty()) return false;
  state_->out = out;
  const size_t parsed =
      http_parser_execute(&state_->parser, &State::Settings(), bytes.data(), bytes.size());
  state_->out = nullptr;
  const auto err = HTTP_PARSER_ERRNO(&state_->parser);
  if (state_->body_too_large) {
    error_ = "response body larger than " + std::to_string(state_->max_body_bytes) + " bytes";
    return false;
  }
  if (err != HPE_OK) {
    error_ = std::string("invalid HTTP response (") + http_errno_name(err) + ": " +
             http_errno_description(err) + ")";
    return false;
  }
  if (parsed != bytes.size()) {
    // http-parser stops after a response that ends the connection (no keep-alive).
    error_ = "bytes after a response that closes the connection";
    return false;
  }
  return true;
}

bool HttpResponseParser::FeedEof(std::vector<HttpResponse>* out) {
  if (!error_.empty()) return false;
  const bool was_inside = state_->inside;
  state_->out = out;
  http_parser_execute(&state_->parser, &State::Settings(), nullptr, 0);
  state_->out = nullptr;
  const auto err = HTTP_PARSER_ERRNO(&state_->parser);
  if (err != HPE_OK || (was_inside && state_->inside)) {
    error_ = "connection closed in the middle of a response";
    return false;
  }
  return true;
}

}  // namespace arenarpc::press
