#include "fake_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <stdexcept>

namespace arenarpc::testing {
namespace {

uint32_t LoadBE32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | uint32_t{u[3]};
}

void AppendBE32(std::string* out, uint32_t v) {
  const char bytes[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                         static_cast<char>(v >> 8), static_cast<char>(v)};
  out->append(bytes, 4);
}

}  // namespace

std::string EncodeFakeFrame(const protocol::RpcMeta& meta, std::string_view payload,
                            std::string_view attachment) {
  const std::string meta_bytes = meta.SerializeAsString();
  std::string frame = "PRPC";
  AppendBE32(&frame, static_cast<uint32_t>(meta_bytes.size() + payload.size() + attachment.size()));
  AppendBE32(&frame, static_cast<uint32_t>(meta_bytes.size()));
  frame += meta_bytes;
  frame += payload;
  frame += attachment;
  return frame;
}

FakeConnection::~FakeConnection() {
  if (fd_ >= 0) ::close(fd_);
}

bool FakeConnection::SendRaw(std::string_view bytes) {
  std::lock_guard lock(write_mutex_);
  if (closed_ || fd_ < 0) return false;
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool FakeConnection::ReplyRaw(int64_t correlation_id, std::string_view payload,
                              std::string_view attachment,
                              const std::function<void(protocol::RpcMeta&)>& edit_meta) {
  protocol::RpcMeta meta;  // brpc >= 1.14 reply shape (spec §2.2)
  meta.mutable_response()->set_error_code(0);
  meta.set_compress_type(0);
  meta.set_correlation_id(correlation_id);
  if (!attachment.empty()) meta.set_attachment_size(static_cast<int32_t>(attachment.size()));
  meta.set_content_type(protocol::CONTENT_TYPE_PB);
  meta.set_checksum_type(0);
  meta.set_checksum_value("");
  if (edit_meta) edit_meta(meta);
  return SendRaw(EncodeFakeFrame(meta, payload, attachment));
}

bool FakeConnection::Reply(const FakeRequest& request, const google::protobuf::Message& response,
                           std::string_view attachment) {
  return ReplyRaw(request.meta.correlation_id(), response.SerializeAsString(), attachment);
}

bool FakeConnection::ReplyError(int64_t correlation_id, int error_code,
                                std::string_view error_text) {
  protocol::RpcMeta meta;
  meta.mutable_response()->set_error_code(error_code);
  meta.mutable_response()->set_error_text(std::string(error_text));
  meta.set_compress_type(0);
  meta.set_correlation_id(correlation_id);
  meta.set_content_type(protocol::CONTENT_TYPE_PB);
  meta.set_checksum_type(0);
  meta.set_checksum_value("");
  return SendRaw(EncodeFakeFrame(meta, {}, {}));
}

void FakeConnection::Close() {
  std::lock_guard lock(write_mutex_);
  if (closed_.exchange(true) || fd_ < 0) return;
  ::shutdown(fd_, SHUT_RDWR);  // the reader sees EOF; the fd stays valid until destruction
}

void FakeConnection::CloseFdLocked() {
  if (fd_ < 0) return;
  const linger hard{1, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  ::close(fd_);
  fd_ = -1;
  closed_ = true;
}

void FakeConnection::Reset() {
  {
    std::lock_guard lock(write_mutex_);
    if (fd_ < 0) return;
    // The reader polls this fd: only it (or nobody, once it left) may close it.
    if (reader_done_ || std::this_thread::get_id() == reader_thread_) {
      CloseFdLocked();
      return;
    }
    reset_requested_ = true;
  }
  FakeServer::WaitFor([this] { return closed_.load(); });
}

FakeServer::FakeServer(Handler handler, Options options)
    : handler_(std::move(handler)), options_(options) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 128) != 0) {
    throw std::runtime_error(std::string("FakeServer: bind/listen: ") + std::strerror(errno));
  }
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  accept_thread_ = std::thread([this] { AcceptLoop(); });
}

FakeServer::~FakeServer() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
  accept_thread_.join();
  ::close(listen_fd_);
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mutex_);
    for (auto& connection : connections_) connection->Close();
    threads = std::move(threads_);
  }
  for (auto& thread : threads) thread.join();
}

void FakeServer::AcceptLoop() {
  while (!stopping_) {
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) {
      if (errno == EINTR) continue;
      return;  // listen socket shut down
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard lock(mutex_);
    auto connection = std::make_shared<FakeConnection>(fd, static_cast<int>(connections_.size()));
    connections_.push_back(connection);
    accepted_.fetch_add(1);
    threads_.emplace_back([this, connection] { ReadLoop(connection); });
  }
}

void FakeServer::ReadLoop(std::shared_ptr<FakeConnection> connection) {
  {
    std::lock_guard lock(connection->write_mutex_);
    connection->reader_thread_ = std::this_thread::get_id();
  }
  std::string buffer;
  char chunk[64 * 1024];
  for (;;) {
    int fd;
    {
      std::lock_guard lock(connection->write_mutex_);
      if (connection->reset_requested_) connection->CloseFdLocked();
      fd = connection->fd_;
    }
    if (fd < 0 || stopping_) break;
    if (options_.read_requests && !options_.read_requests(connection->index())) {
      if (connection->closed_) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, 10);
    if (ready <= 0) continue;
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (!connection->closed_) connection->peer_closed_ = true;
      break;
    }
    buffer.append(chunk, static_cast<size_t>(n));
    while (buffer.size() >= 12) {
      if (buffer.compare(0, 4, "PRPC") != 0) {
        connection->Close();
        break;
      }
      const size_t body = LoadBE32(buffer.data() + 4), meta_size = LoadBE32(buffer.data() + 8);
      if (buffer.size() < 12 + body) break;
      FakeRequest request;
      request.raw_frame = buffer.substr(0, 12 + body);
      request.meta.ParseFromArray(buffer.data() + 12, static_cast<int>(meta_size));
      const size_t attachment = static_cast<size_t>(request.meta.attachment_size());
      request.payload = buffer.substr(12 + meta_size, body - meta_size - attachment);
      request.attachment = buffer.substr(12 + body - attachment, attachment);
      buffer.erase(0, 12 + body);
      requests_.fetch_add(1);
      handler_(connection, std::move(request));
    }
  }
  std::lock_guard lock(connection->write_mutex_);
  connection->reader_done_ = true;
  if (connection->reset_requested_) connection->CloseFdLocked();
}

std::shared_ptr<FakeConnection> FakeServer::connection(int index) const {
  std::lock_guard lock(mutex_);
  return index < static_cast<int>(connections_.size()) ? connections_[static_cast<size_t>(index)]
                                                       : nullptr;
}

int FakeServer::connections_closed_by_peer() const {
  std::lock_guard lock(mutex_);
  int n = 0;
  for (const auto& connection : connections_) n += connection->peer_closed() ? 1 : 0;
  return n;
}

bool FakeServer::WaitFor(const std::function<bool()>& pred) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

int UnusedPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);  // bound, never listened: connects are refused
  return ntohs(addr.sin_port);
}

}  // namespace arenarpc::testing
