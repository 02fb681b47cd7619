// HTTP+JSON transport of arenarpc_press ("--protocol http"): POST /pkg.Service/Method with the
// request's JSON (--replay: the recorded request as it is), HTTP/1.1 keep-alive over --connections connections of its own (Asio), calls
// pipelined on each connection (written back to back, answers matched in order). A non-2xx reply
// is a failed call with the code of its x-bd-error-code header (else kHttpStatusBase - status)
// and the text of x-bd-error-message.
#include <asio/connect.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>

#include <array>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "arenarpc/error_codes.h"
#include "echo/echo.pb.h"
#include "press/host_port.h"
#include "press/http_response_parser.h"
#include "press/press_result.h"
#include "press/replay_set.h"
#include "press/transport.h"

namespace arenarpc::press {
namespace {

using asio::ip::tcp;

// The result of a non-2xx reply: its x-bd-error-code / x-bd-error-message, else the status.
void FailureOf(const HttpResponse& response, int* code, std::string* text) {
  *code = kHttpStatusBase - response.status;
  if (const std::string* header = response.Header("x-bd-error-code")) {
    int value = 0;
    const auto [end, ec] = std::from_chars(header->data(), header->data() + header->size(), value);
    if (ec == std::errc() && end == header->data() + header->size() && value != 0) *code = value;
  }
  if (const std::string* message = response.Header("x-bd-error-message")) {
    *text = *message;
  } else {
    *text = "HTTP " + std::to_string(response.status) + ": " + response.body.substr(0, 200);
  }
}

class HttpTransport;

struct Call {
  const PressRequest* request = nullptr;
  DoneCallback done;  // kept until the call is destroyed: it owns the request (see Finish)
  std::string length_line;
  std::optional<asio::steady_timer> timer;
  bool finished = false;
};

// One keep-alive connection; every member is used on its io_context's thread only.
class Connection {
 public:
  Connection(HttpTransport& transport, asio::io_context& context)
      : transport_(transport), context_(context), socket_(context) {}

  asio::io_context& context() { return context_; }
  void Start(std::shared_ptr<Call> call);
  void Close() {
    ++generation_;
    asio::error_code ignored;
    socket_.close(ignored);
  }

 private:
  void Connect();
  void WriteMore();
  void Read();
  void Deliver(std::vector<HttpResponse>& responses);
  void FailAll(int code, const std::string& text);

  HttpTransport& transport_;
  asio::io_context& context_;
  tcp::socket socket_;
  enum class State { kIdle, kConnecting, kConnected } state_ = State::kIdle;
  uint64_t generation_ = 0;  // bumped when the socket is closed: older handlers are stale
  std::deque<std::shared_ptr<Call>> unsent_;    // waiting for the connection or the writer
  std::deque<std::shared_ptr<Call>> awaiting_;  // written, answered in this order
  bool writing_ = false;
  std::vector<asio::const_buffer> write_buffers_;
  std::vector<std::shared_ptr<Call>> writing_calls_;  // own the bytes being written
  std::array<char, 64 * 1024> read_buffer_;
  HttpResponseParser parser_;
  std::vector<HttpResponse> responses_;
};

class HttpTransport final : public Transport {
 public:
  bool Init(const TransportOptions& options, std::string* error) override {
    if (options.connection_type != "single") {
      *error = "http transport: --connection_type must be single (each of --connections "
               "keep-alive connections pipelines its calls), got '" + options.connection_type + "'";
      return false;
    }
    const int threads = std::max(1, options.io_threads);
    for (int i = 0; i < threads; ++i) contexts_.push_back(std::make_unique<asio::io_context>(1));
    std::string host_header, why;
    if (!ResolveHostPort(options.server, *contexts_[0], &endpoint_, &host_header, &why)) {
      *error = "http transport: " + why;
      return false;
    }
    const google::protobuf::MethodDescriptor* method =
        options.method != nullptr ? options.method
                                  : EchoMethod(options);
    head_ = "POST /" + method->service()->full_name() + "/" + method->name() +
            " HTTP/1.1\r\nHost: " + host_header +
            "\r\nContent-Type: application/json\r\nContent-Length: ";
    timeout_ = std::chrono::milliseconds(options.timeout_ms);
    for (int i = 0; i < std::max(1, options.connections); ++i) {
      connections_.push_back(
          std::make_unique<Connection>(*this, *contexts_[static_cast<size_t>(i) % contexts_.size()]));
    }
    for (auto& context : contexts_) {
      guards_.emplace_back(asio::make_work_guard(*context));
      threads_.emplace_back([c = context.get()] { c->run(); });
    }
    return true;
  }

  void Send(const PressRequest& request, DoneCallback done) override {
    {
      std::lock_guard lock(mu_);
      ++pending_;
    }
    auto call = std::make_shared<Call>();
    call->request = &request;
    call->done = std::move(done);
    call->length_line = std::to_string(request.json.size()) + "\r\n\r\n";
    Connection& connection =
        *connections_[next_.fetch_add(1, std::memory_order_relaxed) % connections_.size()];
    asio::post(connection.context(),
               [&connection, call = std::move(call)]() mutable { connection.Start(std::move(call)); });
  }

  void Drain() override {
    std::unique_lock lock(mu_);
    drained_.wait(lock, [this] { return pending_ == 0; });
  }

  ~HttpTransport() override {
    Drain();
    // Close every socket on its own thread; the contexts then run out of work and return.
    for (auto& connection : connections_) {
      asio::post(connection->context(), [c = connection.get()] { c->Close(); });
    }
    guards_.clear();
    for (auto& thread : threads_) thread.join();
  }

  // Completes `call` once; later results (a reply after its timeout) are dropped.
  void Finish(Call& call, const CallResult& result) {
    if (call.finished) return;
    call.finished = true;
    if (call.timer) call.timer->cancel();
    call.done(result);
    std::lock_guard lock(mu_);
    if (--pending_ == 0) drained_.notify_all();
  }
  void Fail(Call& call, int code, const std::string& text) {
    CallResult result;
    result.error_code = code;
    result.error_text = text;
    Finish(call, result);
  }

  const tcp::endpoint& endpoint() const { return endpoint_; }
  const std::string& head() const { return head_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  std::vector<std::unique_ptr<asio::io_context>> contexts_;  // destroyed after the connections
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::vector<std::thread> threads_;
  tcp::endpoint endpoint_;
  std::string head_;
  std::chrono::milliseconds timeout_{1000};
  std::atomic<uint64_t> next_{0};
  std::mutex mu_;
  std::condition_variable drained_;
  int64_t pending_ = 0;
};

void Connection::Start(std::shared_ptr<Call> call) {
  call->timer.emplace(context_, transport_.timeout());
  call->timer->async_wait([this, weak = std::weak_ptr<Call>(call)](const asio::error_code& ec) {
    if (ec) return;  // cancelled: the call finished
    if (auto call = weak.lock()) {
      transport_.Fail(*call, ERPCTIMEDOUT,
                      "reached timeout=" + std::to_string(transport_.timeout().count()) + "ms");
    }
  });
  unsent_.push_back(std::move(call));
  if (state_ == State::kIdle) {
    Connect();
  } else if (state_ == State::kConnected) {
    WriteMore();
  }
}

void Connection::Connect() {
  state_ = State::kConnecting;
  socket_ = tcp::socket(context_);
  socket_.async_connect(transport_.endpoint(), [this, gen = generation_](const asio::error_code& ec) {
    if (gen != generation_) return;
    if (ec) {
      FailAll(EFAILEDSOCKET, "connect to " + transport_.endpoint().address().to_string() + ":" +
                                 std::to_string(transport_.endpoint().port()) + ": " + ec.message());
      return;
    }
    state_ = State::kConnected;
    asio::error_code ignored;
    socket_.set_option(tcp::no_delay(true), ignored);
    Read();
    WriteMore();
  });
}

void Connection::WriteMore() {
  if (writing_ || unsent_.empty()) return;
  write_buffers_.clear();
  writing_calls_.clear();
  for (auto& call : unsent_) {
    if (call->finished) continue;  // timed out before it could be written: not sent at all
    if (const ReplayCall* replay = call->request->replay) {
      write_buffers_.push_back(asio::buffer(replay->raw_http));  // --replay: as captured
    } else {
      write_buffers_.push_back(asio::buffer(transport_.head()));
      write_buffers_.push_back(asio::buffer(call->length_line));
      write_buffers_.push_back(asio::buffer(call->request->json));
    }
    awaiting_.push_back(call);
    writing_calls_.push_back(std::move(call));
  }
  unsent_.clear();
  if (writing_calls_.empty()) return;
  writing_ = true;
  asio::async_write(socket_, write_buffers_,
                    [this, gen = generation_](const asio::error_code& ec, size_t) {
                      writing_ = false;
                      writing_calls_.clear();
                      if (gen != generation_) {
                        if (state_ == State::kConnected) WriteMore();
                        return;
                      }
                      if (ec) {
                        FailAll(EFAILEDSOCKET, "write: " + ec.message());
                        return;
                      }
                      WriteMore();
                    });
}

void Connection::Read() {
  socket_.async_read_some(
      asio::buffer(read_buffer_), [this, gen = generation_](const asio::error_code& ec, size_t n) {
        if (gen != generation_) return;
        responses_.clear();
        if (ec) {
          const bool complete = ec == asio::error::eof && parser_.FeedEof(&responses_);
          Deliver(responses_);
          if (gen != generation_) return;
          FailAll(EFAILEDSOCKET, complete || ec != asio::error::eof
                                     ? "connection closed: " + ec.message()
                                     : "connection closed: " + parser_.error());
          return;
        }
        const bool ok = parser_.Feed(std::string_view(read_buffer_.data(), n), &responses_);
        Deliver(responses_);
        if (gen != generation_) return;
        if (!ok) {
          FailAll(ERESPONSE, "http: " + parser_.error());
          return;
        }
        Read();
      });
}

void Connection::Deliver(std::vector<HttpResponse>& responses) {
  for (HttpResponse& response : responses) {
    if (awaiting_.empty()) {
      FailAll(ERESPONSE, "http: a response that no request asked for");
      return;
    }
    std::shared_ptr<Call> call = std::move(awaiting_.front());
    awaiting_.pop_front();
    CallResult result;
    std::string text;
    if (response.status >= 200 && response.status < 300) {
      result.json_body = true;
      result.response_json = response.body;
    } else {
      FailureOf(response, &result.error_code, &text);
      result.error_text = text;
    }
    transport_.Finish(*call, result);
    if (!response.keep_alive) {
      FailAll(EFAILEDSOCKET, "the server closed the connection (Connection: close)");
      return;
    }
  }
}

void Connection::FailAll(int code, const std::string& text) {
  Close();
  state_ = State::kIdle;
  parser_.Reset();
  std::deque<std::shared_ptr<Call>> calls;
  calls.swap(awaiting_);
  for (auto& call : unsent_) calls.push_back(std::move(call));
  unsent_.clear();
  for (auto& call : calls) transport_.Fail(*call, code, text);
}

}  // namespace

ARENARPC_PRESS_REGISTER_TRANSPORT("http", HttpTransport);

}  // namespace arenarpc::press
