#pragma once
// Helpers of the runtime-under-load tests: the process's resident memory, a raw non-blocking
// socket that writes without ever reading, and a per-call outcome tally for async calls.

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace arenarpc::e2e {

// AddressSanitizer keeps freed memory resident in its quarantine (256 MB by default) and
// ThreadSanitizer keeps shadow memory for every byte touched (clang 14's TSan: a never-reading
// client's test grew 101 MB where the release build stays under 64), so there the resident size
// says nothing about what the server holds; the tests then check the server's own counters only.
#if defined(ARENARPC_SANITIZED)
inline constexpr bool kResidentSizeIsMeaningful = false;
#else
inline constexpr bool kResidentSizeIsMeaningful = true;
#endif

// Resident set size of this process, bytes (the server runs in the test process).
inline size_t ResidentBytes() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<size_t>(resident) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// A loopback TCP socket in non-blocking mode (fd < 0 when the connect failed).
class RawSocket {
 public:
  explicit RawSocket(int port, int receive_buffer = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (receive_buffer > 0) {
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      ::close(fd_);
      fd_ = -1;
      return;
    }
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
  }
  ~RawSocket() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;

  bool ok() const { return fd_ >= 0; }
  // Bytes the kernel took (0 when it would block); -1 once the peer closed or reset.
  ssize_t TrySend(std::string_view bytes) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n >= 0) return n;
    return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
  }
  // True once the peer has closed (EOF or reset); discards anything readable.
  // Whether the peer closed, without reading what it sent (a client that never reads): only an
  // end of stream already at the head of the input, or a reset, is seen.
  bool PeerClosedWithoutReading() {
    char byte;
    const ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return true;
    return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK;
  }
  // Reads and drops whatever the peer sent; true if it closed.
  bool PeerClosed() {
    char buffer[4096];
    for (;;) {
      const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
      if (n == 0) return true;
      if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
    }
  }

 private:
  int fd_ = -1;
};

}  // namespace arenarpc::e2e
