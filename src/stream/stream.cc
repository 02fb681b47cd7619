#include "stream/stream.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <unordered_map>
#include <vector>

#include "arenarpc/error_codes.h"
#include "call/controller_access.h"
#include "stream/call_streams.h"
#include "stream/stream_host.h"

namespace arenarpc::stream {
namespace {

// The process's streams by id. Ids are never reused (64-bit counter).
class StreamTable {
 public:
  static StreamTable& Instance() {
    static StreamTable* table = new StreamTable;  // never destroyed: streams may outlive main
    return *table;
  }
  StreamId NextId() { return next_id_.fetch_add(1, std::memory_order_relaxed); }
  void Add(const std::shared_ptr<Stream>& stream) {
    std::lock_guard lock(mutex_);
    streams_.emplace(stream->id(), stream);
  }
  std::shared_ptr<Stream> Find(StreamId id) {
    std::lock_guard lock(mutex_);
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second;
  }
  void Remove(StreamId id) {
    std::lock_guard lock(mutex_);
    streams_.erase(id);
  }

 private:
  std::atomic<StreamId> next_id_{1};
  std::mutex mutex_;
  std::unordered_map<StreamId, std::shared_ptr<Stream>> streams_;
};

StreamOptions Normalized(StreamOptions options) {
  if (options.messages_in_batch == 0) options.messages_in_batch = 1;
  return options;
}

}  // namespace

std::shared_ptr<Stream> Stream::Create(const StreamOptions& options,
                                       const protocol::StreamSettings* remote) {
  StreamTable& table = StreamTable::Instance();
  auto stream = std::make_shared<Stream>(table.NextId(), options, remote);
  table.Add(stream);
  return stream;
}

std::shared_ptr<Stream> Stream::Find(StreamId id) { return StreamTable::Instance().Find(id); }

Stream::Stream(StreamId id, const StreamOptions& options, const protocol::StreamSettings* remote)
    : id_(id), options_(Normalized(options)) {
  if (remote != nullptr) {
    remote_ = *remote;
    has_remote_ = true;
  }
  awaiting_reply_ = remote == nullptr;  // a client's stream: its call's reply binds it
}

Stream::~Stream() = default;

void Stream::FillSettings(protocol::StreamSettings* settings) const {
  settings->set_stream_id(static_cast<int64_t>(id_));
  settings->set_need_feedback(options_.max_buf_size > 0);
  settings->set_writable(options_.handler != nullptr);
}

bool Stream::Bind(std::shared_ptr<StreamHost> host) {
  if (!host->Add(shared_from_this())) return false;
  std::lock_guard lock(mutex_);
  host_ = std::move(host);
  return true;
}

bool Stream::BindForReply(std::shared_ptr<StreamHost> host) {
  {
    std::lock_guard lock(mutex_);
    if (!awaiting_reply_ || host_ || state_ != State::kPending) return false;
    awaiting_reply_ = false;
  }
  return Bind(std::move(host));
}

void Stream::Register(StreamRegistry::Entry entry) {
  std::lock_guard lock(mutex_);
  if (state_ == State::kClosed) return;  // closed already: the entry leaves as it goes
  entry_ = std::move(entry);
  counters_ = entry_.counters();
  PublishUnackedLocked();
}

uint64_t Stream::UnackedLocked() const {
  // Without a window (max_buf_size 0) the peer sends no FEEDBACK: only held writes are known.
  return options_.max_buf_size > 0 ? produced_ - remote_consumed_ : held_bytes_;
}

bool Stream::bound_to(const StreamHost* host) {
  std::lock_guard lock(mutex_);
  return host_.get() == host;
}

net::BufferChain Stream::DataFrame(net::BufferChain&& message) const {
  protocol::StreamFrameMeta meta;
  meta.set_stream_id(remote_.stream_id());
  meta.set_source_stream_id(static_cast<int64_t>(id_));
  meta.set_frame_type(protocol::FRAME_TYPE_DATA);
  meta.set_has_continuation(false);
  net::BufferChain frame;
  protocol::EncodeStreamFrame(meta, std::move(message), &frame);
  return frame;
}

void Stream::Connect(const protocol::StreamSettings* remote) {
  bool close_now = false;
  size_t unsendable = 0;
  {
    // Frames are handed to the connection outside mutex_ (a write may close the connection on
    // this thread, and the close terminates this stream), in order under write_mutex_.
    std::lock_guard order(write_mutex_);
    std::vector<net::BufferChain> frames;
    std::shared_ptr<StreamHost> host;
    {
      std::lock_guard lock(mutex_);
      if (state_ != State::kPending || !host_) return;
      if (remote != nullptr) {
        remote_ = *remote;
        has_remote_ = true;
      }
      state_ = State::kConnected;
      if (remote_.writable()) {  // held writes go out behind the reply, in order
        for (net::BufferChain& message : held_) frames.push_back(DataFrame(std::move(message)));
      } else {
        unsendable = held_.size();
      }
      held_.clear();
      held_bytes_ = 0;
      PublishUnackedLocked();
      close_now = close_when_connected_;
      host = host_;
      last_message_at_ = std::chrono::steady_clock::now();
      ArmIdleTimerLocked();
    }
    // Held writes were accepted (StreamWrite returned 0): they go out whatever the connection
    // holds; MaxHeldBytes() bounded them.
    for (net::BufferChain& frame : frames) host->Write(std::move(frame));
  }
  writable_.notify_all();
  if (unsendable > 0) {
    // Writes accepted before the peer said it does not read: fail where both sides see it.
    Terminate(EBADF,
              std::to_string(unsendable) +
                  " message(s) written before the stream connected cannot be delivered: the "
                  "peer's stream does not read",
              /*send_close=*/true);
  } else if (close_now) {
    Terminate(0, "", /*send_close=*/true);
  }
}

size_t Stream::MaxHeldBytes() const {
  constexpr size_t kUnboundLimit = 64u << 20;  // a client stream before its call's reply binds it
  return host_ ? host_->max_unwritten_bytes() : kUnboundLimit;
}

int Stream::Write(const net::BufferChain& message) {
  std::lock_guard order(write_mutex_);
  net::BufferChain frame;
  std::shared_ptr<StreamHost> host;
  StreamCounters* counters = nullptr;  // lives as this stream does
  const uint64_t size = message.size();
  {
    std::lock_guard lock(mutex_);
    if (state_ == State::kClosed || close_when_connected_) return EINVAL;
    if (has_remote_ && !remote_.writable()) return EBADF;
    if (options_.max_buf_size > 0 &&
        produced_ >= remote_consumed_ + static_cast<uint64_t>(options_.max_buf_size)) {
      return EAGAIN;
    }
    net::BufferChain copy;
    copy.AppendShared(message);
    if (state_ != State::kConnected) {
      if (held_bytes_ + size > MaxHeldBytes()) return EOVERCROWDED;
      produced_ += size;
      held_bytes_ += size;
      held_.push_back(std::move(copy));
      if (counters_ != nullptr) counters_->Sent(size);
      PublishUnackedLocked();
      return 0;
    }
    produced_ += size;
    frame = DataFrame(std::move(copy));
    host = host_;
    counters = counters_;
    PublishUnackedLocked();
  }
  const int rc = host->WriteData(std::move(frame));
  if (rc != 0) {
    std::lock_guard lock(mutex_);
    produced_ -= size;  // not sent: the window keeps its room
    PublishUnackedLocked();
  } else if (counters != nullptr) {
    counters->Sent(size);
  }
  return rc;
}

int Stream::Wait(std::chrono::steady_clock::time_point deadline) {
  // The connection does not signal when its output drains, so a writer held by the connection's
  // bound (not by the window, which FEEDBACK signals) re-checks every kRecheck.
  constexpr auto kRecheck = std::chrono::milliseconds(2);
  std::unique_lock lock(mutex_);
  for (;;) {
    if (state_ == State::kClosed || close_when_connected_) return EINVAL;
    const bool window_full =
        options_.max_buf_size > 0 &&
        produced_ >= remote_consumed_ + static_cast<uint64_t>(options_.max_buf_size);
    const bool connection_full = state_ == State::kConnected && host_ && host_->Full();
    if (!window_full && !connection_full) return 0;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return ETIMEDOUT;
    writable_.wait_until(lock, window_full ? deadline : std::min(deadline, now + kRecheck));
  }
}

void Stream::Discard() {
  {
    std::lock_guard lock(mutex_);
    state_ = State::kClosed;
    finished_ = true;  // no turn, no handler call
    held_.clear();
    held_bytes_ = 0;
  }
  StreamTable::Instance().Remove(id_);
}

void Stream::Terminate(int code, const std::string& text, bool send_close) {
  std::shared_ptr<StreamHost> host;
  net::BufferChain close_frame;
  {
    std::lock_guard lock(mutex_);
    if (state_ == State::kClosed) return;
    if (state_ == State::kPending && code == 0 && send_close) {
      // Connect() sends the held writes, then CLOSE; a call that fails fails the stream instead.
      close_when_connected_ = true;
      return;
    }
    const bool connected = state_ == State::kConnected;
    state_ = State::kClosed;
    fail_code_ = code;
    fail_text_ = text;
    held_.clear();
    held_bytes_ = 0;
    if (idle_timer_) idle_timer_->cancel();
    host = host_;
    entry_.Close();  // off the pages; its counters stay (a last batch may still be delivered)
    if (send_close && connected && host) {
      protocol::StreamFrameMeta meta;
      meta.set_stream_id(remote_.stream_id());
      meta.set_source_stream_id(static_cast<int64_t>(id_));
      meta.set_frame_type(protocol::FRAME_TYPE_CLOSE);
      protocol::EncodeStreamFrame(meta, net::BufferChain(), &close_frame);
    }
  }
  writable_.notify_all();
  if (!close_frame.empty()) {
    std::lock_guard order(write_mutex_);  // behind data frames being handed over
    host->Write(std::move(close_frame));
  }
  // From now on frames for this id find no stream (the peer gets RST, as from brpc).
  StreamTable::Instance().Remove(id_);
  if (host) host->Remove(id_);
  std::unique_lock lock(mutex_);
  ScheduleTurnLocked();
}

void Stream::OnFrame(protocol::StreamFrame&& frame) {
  const protocol::StreamFrameMeta& meta = frame.meta;
  switch (meta.frame_type()) {
    case protocol::FRAME_TYPE_FEEDBACK: {
      const int64_t consumed = meta.feedback().consumed_size();
      uint64_t sent = 0;
      {
        std::lock_guard lock(mutex_);
        if (consumed <= 0 || static_cast<uint64_t>(consumed) <= remote_consumed_) return;
        sent = produced_ - held_bytes_;  // at least what went to the connection
        if (static_cast<uint64_t>(consumed) <= sent) {
          remote_consumed_ = static_cast<uint64_t>(consumed);
          PublishUnackedLocked();
        }
      }
      if (static_cast<uint64_t>(consumed) > sent) {
        FailByPeer("the peer's FEEDBACK acknowledged " + std::to_string(consumed) +
                   " bytes consumed, more than the " + std::to_string(sent) + " written");
        return;
      }
      writable_.notify_all();
      return;
    }
    case protocol::FRAME_TYPE_DATA:
      break;
    case protocol::FRAME_TYPE_RST:
      Terminate(ECONNRESET, "stream reset by the peer (RST)", /*send_close=*/false);
      return;
    case protocol::FRAME_TYPE_CLOSE:
      Terminate(0, "", /*send_close=*/false);
      return;
    default:
      return;  // unknown types are ignored
  }
  std::unique_lock lock(mutex_);
  // A server stream may get data between its reply being written and Connect() returning.
  if (state_ == State::kClosed || !has_remote_) return;
  const size_t size = partial_.size() + frame.data.size();
  bool overrun = options_.handler != nullptr && inbox_bytes_ + size > options_.max_unconsumed_bytes;
  // The frame's bytes, and the queued message's overhead once the frame completes one.
  const size_t charge =
      frame.data.size() + (meta.has_continuation() ? 0 : kQueuedMessageOverhead);
  if (!overrun && options_.handler != nullptr && !host_->Charge(charge)) overrun = true;
  if (overrun) {
    const int64_t remote_id = remote_.stream_id();
    std::shared_ptr<StreamHost> host = host_;
    host->Release(partial_.size());
    partial_.clear();
    lock.unlock();
    host->SendRst(remote_id);
    Terminate(EOVERCROWDED,
              "the peer wrote past max_unconsumed_bytes=" +
                  std::to_string(options_.max_unconsumed_bytes) +
                  " (or the connection's max_stream_unconsumed_bytes) without waiting for feedback",
              /*send_close=*/false);
    return;
  }
  if (options_.handler == nullptr) return;  // nobody reads: the peer should not write
  partial_.Append(std::move(frame.data));
  if (meta.has_continuation()) return;
  inbox_bytes_ += partial_.size();
  if (counters_ != nullptr) {
    counters_->Received(partial_.size());
    counters_->SetBufferedIn(inbox_bytes_);
  }
  inbox_.push_back(std::move(partial_));
  partial_.clear();
  last_message_at_ = std::chrono::steady_clock::now();
  ScheduleTurnLocked();
}

void Stream::ScheduleTurnLocked() {
  if (turn_scheduled_ || finished_) return;
  turn_scheduled_ = true;
  auto turn = [self = shared_from_this()] { self->RunTurns(); };
  if (host_) {
    host_->Run(std::move(turn));
  } else {
    mutex_.unlock();  // never bound (a client call that failed): the end is delivered here
    turn();
    mutex_.lock();
  }
}

void Stream::RunTurns() {
  std::vector<net::BufferChain> batch;
  std::vector<IOBuf*> pointers;
  for (;;) {
    batch.clear();
    size_t bytes = 0;
    bool idle = false, finish = false;
    std::shared_ptr<StreamHost> host;
    {
      std::lock_guard lock(mutex_);
      while (!inbox_.empty() && batch.size() < options_.messages_in_batch) {
        bytes += inbox_.front().size();
        batch.push_back(std::move(inbox_.front()));
        inbox_.pop_front();
      }
      idle = batch.empty() && idle_event_;
      idle_event_ = false;
      finish = batch.empty() && !idle && state_ == State::kClosed;
      if (batch.empty() && !idle && !finish) {
        turn_scheduled_ = false;
        return;
      }
      host = host_;
      if (finish) {
        finished_ = true;
        idle_timer_.reset();
        if (host) host->Release(partial_.size());
        partial_.clear();
        host_.reset();  // breaks stream <-> host
      }
    }
    StreamInputHandler* handler = options_.handler;
    if (!batch.empty()) {
      pointers.clear();
      for (net::BufferChain& message : batch) pointers.push_back(&message);
      if (handler != nullptr) handler->on_received_messages(id_, pointers.data(), pointers.size());
      uint64_t consumed = 0;
      bool feedback = false;
      {
        std::lock_guard lock(mutex_);
        inbox_bytes_ -= bytes;
        if (counters_ != nullptr) counters_->SetBufferedIn(inbox_bytes_);
        consumed_ += bytes;
        consumed = consumed_;
        feedback = state_ != State::kClosed && remote_.need_feedback();
      }
      if (host) host->Release(bytes + batch.size() * kQueuedMessageOverhead);
      if (feedback) SendFeedback(consumed);
    } else if (idle) {
      if (handler != nullptr) handler->on_idle_timeout(id_);
    } else {
      if (handler != nullptr) {
        if (fail_code_ != 0) handler->on_failed(id_, fail_code_, fail_text_);
        handler->on_closed(id_);
      }
      return;
    }
  }
}

void Stream::FailByPeer(const std::string& text) {
  std::shared_ptr<StreamHost> host;
  int64_t remote_id = 0;
  {
    std::lock_guard lock(mutex_);
    if (state_ == State::kClosed) return;
    host = host_;
    remote_id = remote_.stream_id();
  }
  if (host) host->SendRst(remote_id);
  Terminate(EPROTO, text, /*send_close=*/false);
}

void Stream::SendFeedback(uint64_t consumed) {
  protocol::StreamFrameMeta meta;
  std::shared_ptr<StreamHost> host;
  {
    std::lock_guard lock(mutex_);
    if (!host_) return;
    host = host_;
    meta.set_stream_id(remote_.stream_id());
  }
  meta.set_source_stream_id(static_cast<int64_t>(id_));
  meta.set_frame_type(protocol::FRAME_TYPE_FEEDBACK);
  meta.mutable_feedback()->set_consumed_size(static_cast<int64_t>(consumed));
  net::BufferChain frame;
  protocol::EncodeStreamFrame(meta, net::BufferChain(), &frame);
  host->WriteControl(std::move(frame));
}

void Stream::ArmIdleTimerLocked() {
  if (options_.idle_timeout_ms < 0 || !host_ || state_ != State::kConnected) return;
  if (!idle_timer_) idle_timer_ = std::make_unique<asio::steady_timer>(host_->executor());
  idle_timer_->expires_at(last_message_at_ + std::chrono::milliseconds(options_.idle_timeout_ms));
  idle_timer_->async_wait([weak = weak_from_this()](const asio::error_code& error) {
    if (error) return;
    if (auto self = weak.lock()) self->OnIdleTimer();
  });
}

void Stream::OnIdleTimer() {
  std::lock_guard lock(mutex_);
  if (state_ != State::kConnected || !idle_timer_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_message_at_ >= std::chrono::milliseconds(options_.idle_timeout_ms)) {
    idle_event_ = true;
    last_message_at_ = now;  // the next one after another idle_timeout_ms
    ScheduleTurnLocked();
  }
  ArmIdleTimerLocked();
}

net::BufferChain Stream::WrapReply(net::BufferChain&& rpc_frame) {
  std::lock_guard lock(mutex_);
  return DataFrame(std::move(rpc_frame));
}

void AddRequestSettings(Controller& cntl, protocol::RpcMeta* meta) {
  const std::shared_ptr<internal::CallStreams>& streams = internal::ControllerAccess::streams(cntl);
  if (!streams || streams->request_stream == INVALID_STREAM_ID) return;
  if (auto stream = Stream::Find(streams->request_stream)) {
    stream->FillSettings(meta->mutable_stream_settings());
  }
}

bool OnClientReply(Controller& cntl, const protocol::RpcMeta& meta) {
  const std::shared_ptr<internal::CallStreams>& streams = internal::ControllerAccess::streams(cntl);
  if (!streams || streams->request_stream == INVALID_STREAM_ID || cntl.Failed()) return true;
  if (!meta.has_stream_settings()) return false;
  if (auto stream = Stream::Find(streams->request_stream)) stream->Connect(&meta.stream_settings());
  return true;
}

void OnClientCallEnd(Controller& cntl) {
  const std::shared_ptr<internal::CallStreams>& streams = internal::ControllerAccess::streams(cntl);
  if (!streams || streams->request_stream == INVALID_STREAM_ID) return;
  std::shared_ptr<Stream> stream = Stream::Find(streams->request_stream);
  if (!stream || stream->connected()) return;
  if (cntl.Failed()) {
    stream->Terminate(cntl.ErrorCode(), cntl.ErrorText(), /*send_close=*/false);
  } else {
    stream->Terminate(EINVAL, "the server did not accept the stream", /*send_close=*/false);
  }
}

void OfferStream(Controller& cntl, const protocol::StreamSettings& remote,
                 std::shared_ptr<StreamHost> host, std::string_view method) {
  auto streams = std::make_shared<internal::CallStreams>();
  streams->offered = true;
  streams->remote = remote;
  streams->host = std::move(host);
  streams->method = method;
  internal::ControllerAccess::streams(cntl) = std::move(streams);
}

std::shared_ptr<Stream> AcceptedStream(Controller& cntl) {
  const std::shared_ptr<internal::CallStreams>& streams = internal::ControllerAccess::streams(cntl);
  if (!streams || streams->response_stream == INVALID_STREAM_ID) return nullptr;
  return Stream::Find(streams->response_stream);
}

bool Stream::connected() {
  std::lock_guard lock(mutex_);
  return state_ == State::kConnected;
}

}  // namespace arenarpc::stream

namespace arenarpc {

using internal::CallStreams;
using internal::ControllerAccess;

int StreamCreate(StreamId* id, Controller& cntl, const StreamOptions* options) {
  std::shared_ptr<CallStreams>& streams = ControllerAccess::streams(cntl);
  if (id == nullptr || (streams && streams->request_stream != INVALID_STREAM_ID)) return -1;
  if (!streams) streams = std::make_shared<CallStreams>();
  auto stream = stream::Stream::Create(options != nullptr ? *options : StreamOptions(), nullptr);
  streams->request_stream = stream->id();
  *id = stream->id();
  return 0;
}

int StreamAccept(StreamId* id, Controller& cntl, const StreamOptions* options) {
  std::shared_ptr<CallStreams>& streams = ControllerAccess::streams(cntl);
  if (id == nullptr || !streams || !streams->offered || !streams->host ||
      streams->response_stream != INVALID_STREAM_ID) {
    return -1;
  }
  auto stream = stream::Stream::Create(options != nullptr ? *options : StreamOptions(),
                                       &streams->remote);
  if (!stream->Bind(streams->host)) {
    stream->Discard();  // the handler is not called: the caller still owns it (brpc's contract)
    return -1;
  }
  stream->Register(streams->host->Register(stream->id(), streams->method));
  streams->response_stream = stream->id();
  *id = stream->id();
  return 0;
}

int StreamWrite(StreamId id, const IOBuf& message) {
  std::shared_ptr<stream::Stream> stream = stream::Stream::Find(id);
  return stream ? stream->Write(message) : EINVAL;
}

int StreamWait(StreamId id, const timespec* due_time) {
  std::shared_ptr<stream::Stream> stream = stream::Stream::Find(id);
  if (!stream) return EINVAL;
  auto deadline = std::chrono::steady_clock::time_point::max();
  if (due_time != nullptr) {
    const auto due = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::seconds(due_time->tv_sec) + std::chrono::nanoseconds(due_time->tv_nsec)));
    deadline = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   due - std::chrono::system_clock::now());
  }
  return stream->Wait(deadline);
}

int StreamClose(StreamId id) {
  std::shared_ptr<stream::Stream> stream = stream::Stream::Find(id);
  if (!stream) return EINVAL;
  stream->Terminate(0, "", /*send_close=*/true);
  return 0;
}

}  // namespace arenarpc
