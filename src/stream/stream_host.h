#pragma once
// StreamHost: the streams bound to one baidu_std connection (server or client side). Routes the
// connection's "STRM" frames to them, answers frames for streams it does not hold with RST (as
// brpc), writes their frames, bounds them (stream count, unconsumed bytes) and fails them all when
// the connection goes.

#include <asio/any_io_executor.hpp>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "arenarpc/stream.h"
#include "net/connection.h"
#include "protocol/stream_frame.h"
#include "stream/stream_registry.h"

namespace arenarpc::stream {

class Stream;

class StreamHost : public std::enable_shared_from_this<StreamHost> {
 public:
  struct Limits {
    size_t max_streams = 1024;
    size_t max_unconsumed_bytes = 64u << 20;  // summed over the streams
    // Unsent output the connection may hold: past it StreamWrite() is EOVERCROWDED (StreamWait
    // waits), and RST and FEEDBACK frames are dropped (a peer that floods frames and never reads;
    // feedback is cumulative, the next one catches up).
    size_t max_unwritten_bytes = 64u << 20;
  };
  // Runs a stream's handler turn (server: on a fiber; client: on the I/O executor).
  using Runner = std::function<void(std::function<void()>)>;

  // client_side: streams created by StreamCreate() may bind here on their call's reply.
  // `registry`: where the streams accepted here are shown (a server's), or null.
  StreamHost(std::weak_ptr<net::Connection> connection, asio::any_io_executor executor,
             Runner runner, Limits limits, bool client_side,
             std::shared_ptr<StreamRegistry> registry = nullptr);

  // One received frame (the connection's reading thread). Client side: when it is the first DATA
  // of a stream waiting for its call's reply, the stream binds here, *reply gets the embedded
  // "PRPC" frame, and true is returned; the caller handles it as a reply.
  bool Dispatch(protocol::StreamFrame&& frame, net::BufferChain* reply);
  // The connection is gone: every stream fails with `code` (any thread, idempotent).
  void Close(int code, const std::string& text);

  // For Stream:
  bool Add(const std::shared_ptr<Stream>& stream);  // false: closed, or max_streams
  void Remove(StreamId id);
  // A frame already accepted (held writes, CLOSE): queued whatever the connection holds. false:
  // the connection is gone.
  bool Write(net::BufferChain&& frame);
  // A new DATA frame: 0, EOVERCROWDED (the connection holds max_unwritten_bytes unsent; nothing
  // queued) or EINVAL (the connection is gone).
  int WriteData(net::BufferChain&& frame);
  bool Full() const;  // the connection holds max_unwritten_bytes unsent
  size_t max_unwritten_bytes() const noexcept { return limits_.max_unwritten_bytes; }
  void SendRst(int64_t remote_stream_id);
  void WriteControl(net::BufferChain&& frame);  // RST/FEEDBACK: dropped past max_unwritten_bytes
  bool Charge(size_t bytes);             // unconsumed bytes; false: over the limit (not charged)
  void Release(size_t bytes);
  void Run(std::function<void()> turn) { runner_(std::move(turn)); }
  // A stream accepted here for `method`, in the registry (empty without one).
  StreamRegistry::Entry Register(StreamId id, std::string_view method) const;
  const asio::any_io_executor& executor() const noexcept { return executor_; }

 private:
  const std::weak_ptr<net::Connection> connection_;
  const asio::any_io_executor executor_;
  const Runner runner_;
  const Limits limits_;
  const bool client_side_;
  const std::shared_ptr<StreamRegistry> registry_;
  std::atomic<size_t> unconsumed_{0};
  std::mutex mutex_;
  bool closed_ = false;
  std::unordered_map<StreamId, std::weak_ptr<Stream>> streams_;
};

}  // namespace arenarpc::stream
