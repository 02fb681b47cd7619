#include "stream/stream_host.h"

#include <cerrno>
#include <vector>

#include "arenarpc/error_codes.h"

#include "stream/stream.h"

namespace arenarpc::stream {

StreamHost::StreamHost(std::weak_ptr<net::Connection> connection, asio::any_io_executor executor,
                       Runner runner, Limits limits, bool client_side,
                       std::shared_ptr<StreamRegistry> registry)
    : connection_(std::move(connection)),
      executor_(std::move(executor)),
      runner_(std::move(runner)),
      limits_(limits),
      client_side_(client_side),
      registry_(std::move(registry)) {}

bool StreamHost::Dispatch(protocol::StreamFrame&& frame, net::BufferChain* reply) {
  const protocol::StreamFrameMeta& meta = frame.meta;
  std::shared_ptr<Stream> stream = Stream::Find(static_cast<StreamId>(meta.stream_id()));
  if (stream && !stream->bound_to(this)) {
    // Only a client stream's first DATA (its call's reply) may bind it; a connection never
    // reaches streams of another connection.
    if (client_side_ && meta.frame_type() == protocol::FRAME_TYPE_DATA &&
        !meta.has_continuation() && stream->BindForReply(shared_from_this())) {
      *reply = std::move(frame.data);
      return true;
    }
    stream.reset();
  }
  if (!stream) {
    // As brpc: answer anything that names its sender with RST (the sender's stream is stale).
    if (meta.has_source_stream_id()) SendRst(meta.source_stream_id());
    return false;
  }
  stream->OnFrame(std::move(frame));
  return false;
}

void StreamHost::Close(int code, const std::string& text) {
  std::vector<std::shared_ptr<Stream>> streams;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
    for (auto& [id, weak] : streams_) {
      if (auto stream = weak.lock()) streams.push_back(std::move(stream));
    }
    streams_.clear();
  }
  for (auto& stream : streams) stream->Terminate(code, text, /*send_close=*/false);
}

bool StreamHost::Add(const std::shared_ptr<Stream>& stream) {
  std::lock_guard lock(mutex_);
  if (closed_ || streams_.size() >= limits_.max_streams) return false;
  streams_.emplace(stream->id(), stream);
  return true;
}

StreamRegistry::Entry StreamHost::Register(StreamId id, std::string_view method) const {
  std::shared_ptr<net::Connection> connection = connection_.lock();
  if (!registry_ || !connection) return {};
  return registry_->Open(stats::StreamKind::kStrm, id, method, connection->id());
}

void StreamHost::Remove(StreamId id) {
  std::lock_guard lock(mutex_);
  streams_.erase(id);
}

bool StreamHost::Write(net::BufferChain&& frame) {
  std::shared_ptr<net::Connection> connection = connection_.lock();
  if (!connection || connection->closed()) return false;
  connection->Write(std::move(frame));
  return true;
}

int StreamHost::WriteData(net::BufferChain&& frame) {
  std::shared_ptr<net::Connection> connection = connection_.lock();
  if (!connection || connection->closed()) return EINVAL;
  if (connection->unwritten_held_bytes() >= limits_.max_unwritten_bytes) return EOVERCROWDED;
  connection->Write(std::move(frame));
  return 0;
}

bool StreamHost::Full() const {
  std::shared_ptr<net::Connection> connection = connection_.lock();
  return connection && connection->unwritten_held_bytes() >= limits_.max_unwritten_bytes;
}

void StreamHost::SendRst(int64_t remote_stream_id) {
  protocol::StreamFrameMeta meta;
  meta.set_stream_id(remote_stream_id);
  meta.set_frame_type(protocol::FRAME_TYPE_RST);
  net::BufferChain frame;
  protocol::EncodeStreamFrame(meta, net::BufferChain(), &frame);
  WriteControl(std::move(frame));
}

void StreamHost::WriteControl(net::BufferChain&& frame) {
  std::shared_ptr<net::Connection> connection = connection_.lock();
  if (!connection || connection->unwritten_held_bytes() >= limits_.max_unwritten_bytes) return;
  connection->Write(std::move(frame));
}

bool StreamHost::Charge(size_t bytes) {
  size_t now = unconsumed_.load(std::memory_order_relaxed);
  do {
    if (now + bytes > limits_.max_unconsumed_bytes) return false;
  } while (!unconsumed_.compare_exchange_weak(now, now + bytes, std::memory_order_relaxed));
  return true;
}

void StreamHost::Release(size_t bytes) { unconsumed_.fetch_sub(bytes, std::memory_order_relaxed); }

}  // namespace arenarpc::stream
