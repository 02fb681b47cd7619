#pragma once
// A TCP port on 127.0.0.1 for a process a test starts that must be told its port (etcd,
// Prometheus, an internal_port). It is picked below the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range, 32768-60999 by default), so that between this check and
// the child's bind no other test running in parallel can be given the same port by a bind to
// port 0 or by an outgoing connection; the random start keeps parallel tests that pick ports this
// way apart. -1 if none is free.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>

namespace arenarpc::testing {

// 127.0.0.1:port.
inline sockaddr_in LoopbackAddress(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  return address;
}

inline bool PortIsFree(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  const sockaddr_in address = LoopbackAddress(port);
  const bool free = ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return free;
}

inline int FreePort() {
  constexpr int kFirst = 20000, kCount = 12000;  // 20000-31999
  static thread_local std::mt19937 random{std::random_device{}()};
  const int start = static_cast<int>(random() % kCount);
  for (int i = 0; i < kCount; ++i) {
    const int port = kFirst + (start + i) % kCount;
    if (PortIsFree(port)) return port;
  }
  return -1;
}

}  // namespace arenarpc::testing
