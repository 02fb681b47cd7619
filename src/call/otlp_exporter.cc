#include "arenarpc/otlp_exporter.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "util/hex.h"
#include "util/json_string.h"

namespace arenarpc {
namespace {

using Clock = std::chrono::steady_clock;
using util::Hex;

uint64_t UnixNanos(std::chrono::system_clock::time_point t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

void Attribute(std::string* out, bool* first, std::string_view key, std::string_view value) {
  if (!*first) out->push_back(',');
  *first = false;
  out->append("{\"key\":");
  util::AppendJsonString(out, key);
  out->append(",\"value\":{\"stringValue\":");
  util::AppendJsonString(out, value);
  out->append("}}");
}

void Attribute(std::string* out, bool* first, std::string_view key, uint64_t value) {
  if (!*first) out->push_back(',');
  *first = false;
  out->append("{\"key\":");
  util::AppendJsonString(out, key);
  out->append(",\"value\":{\"intValue\":\"" + std::to_string(value) + "\"}}");
}

void AppendSpan(std::string* out, const Span& span) {
  // OpenTelemetry's RPC span name: "package.Service/Method".
  std::string name = span.method;
  const size_t dot = name.rfind('.');
  std::string service = dot == std::string::npos ? std::string() : name.substr(0, dot);
  std::string method = dot == std::string::npos ? name : name.substr(dot + 1);
  if (dot != std::string::npos) name[dot] = '/';
  const uint64_t start = UnixNanos(span.start_time);
  out->append("{\"traceId\":\"" + Hex(span.trace.trace_id_high) + Hex(span.trace.trace_id) +
              "\",\"spanId\":\"" + Hex(span.trace.span_id) + "\"");
  if (span.trace.parent_span_id != 0) {
    out->append(",\"parentSpanId\":\"" + Hex(span.trace.parent_span_id) + "\"");
  }
  if (!span.trace.tracestate.empty()) {
    out->append(",\"traceState\":");
    util::AppendJsonString(out, span.trace.tracestate);
  }
  out->append(",\"name\":");
  util::AppendJsonString(out, name);
  // SPAN_KIND_SERVER = 2, SPAN_KIND_CLIENT = 3
  out->append(",\"kind\":" + std::string(span.kind == SpanKind::kServer ? "2" : "3"));
  out->append(",\"startTimeUnixNano\":\"" + std::to_string(start) + "\",\"endTimeUnixNano\":\"" +
              std::to_string(start + static_cast<uint64_t>(span.latency.count())) + "\"");
  out->append(",\"attributes\":[");
  bool first = true;
  Attribute(out, &first, "rpc.system", span.protocol);
  Attribute(out, &first, "rpc.service", service);
  Attribute(out, &first, "rpc.method", method);
  Attribute(out, &first, "network.peer.address", span.peer);
  Attribute(out, &first, "arenarpc.request_bytes", span.request_bytes);
  Attribute(out, &first, "arenarpc.response_bytes", span.response_bytes);
  if (!span.memory_strategy.empty()) {
    Attribute(out, &first, "arenarpc.memory_strategy", span.memory_strategy);
  }
  if (span.message_bytes) {
    Attribute(out, &first, "arenarpc.message_bytes", *span.message_bytes);
    Attribute(out, &first, "arenarpc.message_bytes_source", span.message_bytes_source);
  }
  if (span.error_code != 0) {
    Attribute(out, &first, "arenarpc.error_code", static_cast<uint64_t>(span.error_code));
  }
  out->append("],\"events\":[");
  first = true;
  auto event = [&](std::chrono::nanoseconds offset, std::string_view text) {
    if (!first) out->push_back(',');
    first = false;
    out->append("{\"timeUnixNano\":\"" +
                std::to_string(start + static_cast<uint64_t>(offset.count())) + "\",\"name\":");
    util::AppendJsonString(out, text);
    out->push_back('}');
  };
  for (size_t i = 0; i < kSpanPhaseCount; ++i) {
    if (span.phases[i]) event(*span.phases[i], SpanPhaseName(static_cast<SpanPhase>(i)));
  }
  for (const SpanAnnotation& a : span.annotations) event(a.offset, a.text);
  out->append("]");
  if (span.error_code != 0) {  // STATUS_CODE_ERROR = 2
    out->append(",\"status\":{\"code\":2,\"message\":");
    util::AppendJsonString(out, span.error_text);
    out->append("}");
  }
  out->append("}");
}

// Waits for `events` on fd until the deadline: true when ready.
bool WaitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, static_cast<int>(left.count()));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

struct Socket {
  int fd = -1;
  ~Socket() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

std::string OtlpJson(const std::string& service_name,
                     const std::deque<std::shared_ptr<const Span>>& spans) {
  std::string out = "{\"resourceSpans\":[{\"resource\":{\"attributes\":[";
  bool first = true;
  Attribute(&out, &first, "service.name", service_name);
  out.append("]},\"scopeSpans\":[{\"scope\":{\"name\":\"arenarpc\"},\"spans\":[");
  for (size_t i = 0; i < spans.size(); ++i) {
    if (i != 0) out.push_back(',');
    AppendSpan(&out, *spans[i]);
  }
  out.append("]}]}]}");
  return out;
}

std::shared_ptr<OtlpHttpExporter> OtlpHttpExporter::Create(OtlpExporterOptions options,
                                                           std::string* error) {
  constexpr std::string_view kScheme = "http://";
  std::string_view url = options.url;
  if (!url.starts_with(kScheme)) {
    *error = "OTLP url must be http://host:port/path, got '" + options.url + "'";
    return nullptr;
  }
  url.remove_prefix(kScheme.size());
  const size_t slash = url.find('/');
  const std::string_view authority = url.substr(0, slash);
  Target target;
  target.path = slash == std::string_view::npos ? "/v1/traces" : std::string(url.substr(slash));
  const size_t colon = authority.rfind(':');
  target.host = std::string(authority.substr(0, colon));
  target.port = colon == std::string_view::npos ? "80" : std::string(authority.substr(colon + 1));
  if (target.host.empty() || target.port.empty() ||
      target.port.find_first_not_of("0123456789") != std::string::npos) {
    *error = "OTLP url must be http://host:port/path, got '" + options.url + "'";
    return nullptr;
  }
  if (options.max_queued_spans == 0 || options.max_batch_spans == 0) {
    *error = "OTLP max_queued_spans and max_batch_spans must be > 0";
    return nullptr;
  }
  return std::shared_ptr<OtlpHttpExporter>(new OtlpHttpExporter(std::move(options), target));
}

OtlpHttpExporter::OtlpHttpExporter(OtlpExporterOptions options, Target target)
    : options_(std::move(options)), target_(std::move(target)) {
  thread_ = std::thread([this] { Run(); });
}

OtlpHttpExporter::~OtlpHttpExporter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void OtlpHttpExporter::Export(const std::shared_ptr<const Span>& span) {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    if (queue_.size() >= options_.max_queued_spans) {
      dropped_queue_full_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    queue_.push_back(span);
    ++queued_total_;
    wake = queue_.size() >= options_.max_batch_spans;
  }
  if (wake) wake_.notify_one();
}

void OtlpHttpExporter::Flush() {
  std::unique_lock lock(mutex_);
  const uint64_t target = queued_total_;
  flush_wanted_ = true;
  wake_.notify_one();
  flushed_.wait(lock, [&] { return done_total_ >= target; });
}

OtlpHttpExporter::Counts OtlpHttpExporter::counts() const noexcept {
  return Counts{exported_.load(std::memory_order_relaxed),
                dropped_queue_full_.load(std::memory_order_relaxed),
                dropped_failed_.load(std::memory_order_relaxed),
                failed_batches_.load(std::memory_order_relaxed)};
}

std::string OtlpHttpExporter::last_error() const {
  std::lock_guard lock(mutex_);
  return last_error_;
}

void OtlpHttpExporter::Run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait_for(lock, options_.flush_interval, [&] {
      return stopping_ || flush_wanted_ || queue_.size() >= options_.max_batch_spans;
    });
    if (queue_.empty()) {
      flush_wanted_ = false;
      flushed_.notify_all();
      if (stopping_) return;
      continue;
    }
    std::deque<std::shared_ptr<const Span>> batch;
    while (!queue_.empty() && batch.size() < options_.max_batch_spans) {
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    lock.unlock();
    std::string error;
    const bool sent = Post(OtlpJson(options_.service_name, batch), &error);
    if (sent) {
      exported_.fetch_add(batch.size(), std::memory_order_relaxed);
    } else {
      failed_batches_.fetch_add(1, std::memory_order_relaxed);
      dropped_failed_.fetch_add(batch.size(), std::memory_order_relaxed);
    }
    lock.lock();
    if (!sent) last_error_ = std::move(error);
    done_total_ += batch.size();
    flushed_.notify_all();
  }
}

bool OtlpHttpExporter::Post(const std::string& body, std::string* error) const {
  const Clock::time_point deadline = Clock::now() + options_.timeout;
  const std::string where = target_.host + ":" + target_.port;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(target_.host.c_str(), target_.port.c_str(), &hints, &found);
      rc != 0) {
    *error = "resolve " + where + ": " + gai_strerror(rc);
    return false;
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> addresses(found, &freeaddrinfo);
  Socket socket;
  socket.fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (socket.fd < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  if (connect(socket.fd, found->ai_addr, found->ai_addrlen) != 0 && errno != EINPROGRESS) {
    *error = "connect " + where + ": " + std::strerror(errno);
    return false;
  }
  if (!WaitFor(socket.fd, POLLOUT, deadline)) {
    *error = "connect " + where + ": timed out";
    return false;
  }
  int so_error = 0;
  socklen_t length = sizeof(so_error);
  getsockopt(socket.fd, SOL_SOCKET, SO_ERROR, &so_error, &length);
  if (so_error != 0) {
    *error = "connect " + where + ": " + std::strerror(so_error);
    return false;
  }
  const std::string request = "POST " + target_.path + " HTTP/1.1\r\nHost: " + where +
                              "\r\nContent-Type: application/json\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = send(socket.fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!WaitFor(socket.fd, POLLOUT, deadline)) {
        *error = "send to " + where + ": timed out";
        return false;
      }
    } else {
      *error = "send to " + where + ": " + std::strerror(errno);
      return false;
    }
  }
  // The status line is all that is read: "HTTP/1.1 200 OK".
  std::string answer;
  char buffer[512];
  while (answer.find("\r\n") == std::string::npos && answer.size() < 4096) {
    const ssize_t n = recv(socket.fd, buffer, sizeof(buffer), 0);
    if (n > 0) {
      answer.append(buffer, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno == EAGAIN || errno == EINTR) {
      if (!WaitFor(socket.fd, POLLIN, deadline)) {
        *error = "answer from " + where + ": timed out";
        return false;
      }
    } else {
      *error = "answer from " + where + ": " + std::strerror(errno);
      return false;
    }
  }
  const std::string status_line = answer.substr(0, answer.find("\r\n"));
  if (status_line.size() >= 12 && status_line.starts_with("HTTP/1.") && status_line[9] == '2') {
    return true;
  }
  *error = status_line.empty() ? "no answer from " + where
                               : "collector " + where + " answered '" + status_line + "'";
  return false;
}

}  // namespace arenarpc
