#pragma once
// FakeServer: a tiny, scriptable baidu_std server for client tests, written on plain POSIX sockets
// with its own frame reader/writer (independent of the client's code paths). A handler sees every
// request frame and decides: reply now, later (from any thread), out of order, never, with an
// error, with garbage, or close / reset the connection.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <google/protobuf/message.h>

#include "protocol/rpc_meta.pb.h"

namespace arenarpc::testing {

struct FakeRequest {
  protocol::RpcMeta meta;
  std::string payload;     // as on the wire (maybe compressed)
  std::string attachment;
  std::string raw_frame;   // the whole frame, header included
};

class FakeConnection {
 public:
  explicit FakeConnection(int fd, int index) : fd_(fd), index_(index) {}
  ~FakeConnection();
  FakeConnection(const FakeConnection&) = delete;
  FakeConnection& operator=(const FakeConnection&) = delete;

  int index() const noexcept { return index_; }  // 0 for the first accepted connection, ...
  // Any thread. Writes one whole frame; false once the connection is closed.
  bool SendRaw(std::string_view bytes);
  // A success reply (brpc >= 1.14 shape) for `request`, payload = response serialized.
  bool Reply(const FakeRequest& request, const google::protobuf::Message& response,
             std::string_view attachment = {});
  // A reply with the given raw payload bytes and extra meta settings.
  bool ReplyRaw(int64_t correlation_id, std::string_view payload, std::string_view attachment,
                const std::function<void(protocol::RpcMeta&)>& edit_meta = nullptr);
  bool ReplyError(int64_t correlation_id, int error_code, std::string_view error_text);
  // Orderly close (FIN) / abortive close (RST, SO_LINGER 0).
  void Close();
  void Reset();
  bool closed() const noexcept { return closed_.load(); }
  // Set by the reader when the peer closed its side.
  bool peer_closed() const noexcept { return peer_closed_.load(); }

 private:
  friend class FakeServer;
  void CloseFdLocked();  // write_mutex_ held: RST-close the fd

  std::mutex write_mutex_;
  int fd_;  // guarded by write_mutex_ once the reader runs
  const int index_;
  std::atomic<bool> closed_{false}, peer_closed_{false};
  bool reset_requested_ = false;  // guarded by write_mutex_
  bool reader_done_ = false;      // guarded by write_mutex_
  std::thread::id reader_thread_;
};

// Encodes a frame: header + meta + payload + attachment (attachment_size is NOT set for you).
std::string EncodeFakeFrame(const protocol::RpcMeta& meta, std::string_view payload,
                            std::string_view attachment);

class FakeServer {
 public:
  using Handler = std::function<void(const std::shared_ptr<FakeConnection>&, FakeRequest&&)>;
  struct Options {
    // Returns false for connections (by accept index) that must not be read now: their data
    // piles up in the kernel. Asked again every few milliseconds, so reading may start later.
    // Null: read every connection.
    std::function<bool(int connection_index)> read_requests;
  };
  explicit FakeServer(Handler handler) : FakeServer(std::move(handler), Options()) {}
  FakeServer(Handler handler, Options options);
  ~FakeServer();  // closes everything and joins its threads
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  int port() const noexcept { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int connections_accepted() const noexcept { return accepted_.load(); }
  int requests_received() const noexcept { return requests_.load(); }
  // Connection by accept order (nullptr if not accepted yet).
  std::shared_ptr<FakeConnection> connection(int index) const;
  // Number of accepted connections whose peer (the client) closed them.
  int connections_closed_by_peer() const;
  // Polls until pred() or ~2 s pass; returns pred().
  static bool WaitFor(const std::function<bool()>& pred);

 private:
  void AcceptLoop();
  void ReadLoop(std::shared_ptr<FakeConnection> connection);

  Handler handler_;
  Options options_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0}, requests_{0};
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<FakeConnection>> connections_;
  std::vector<std::thread> threads_;
  std::thread accept_thread_;
};

// A port on 127.0.0.1 where nothing listens (connect -> ECONNREFUSED).
int UnusedPort();

}  // namespace arenarpc::testing
