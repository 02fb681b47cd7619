// http_echo: a closed-loop HTTP/1.1 client for the echo workload — POST
// /arenarpc.example.EchoService/Echo with the workload's EchoRequest as JSON, on keep-alive
// connections with `--depth` requests pipelined on each, from one thread. Prints one JSON line:
//   {"protocol":"http_json","qps":...,"calls":...,"errors":...,"seconds":...}
// Used by bench/http_vs_baidu_std.sh against arenarpc_press on baidu_std (docs/http.md).
#include <arpa/inet.h>
#include <gflags/gflags.h>
#include <google/protobuf/util/json_util.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "echo/echo_payload.pb.h"
#include "echo/payload_generator.h"

DEFINE_string(server, "127.0.0.1:8000", "Server address, ip:port");
DEFINE_int32(connections, 1, "Keep-alive connections");
DEFINE_int32(depth, 8, "Requests in flight (pipelined) per connection");
DEFINE_int32(payload_scale, 1, "Workload payload_scale");
DEFINE_int32(ring, 64, "Pre-generated requests, cycled (as arenarpc_press: the same payloads)");
DEFINE_double(warmup_s, 2, "Seconds of load before measuring");
DEFINE_double(duration_s, 10, "Seconds measured");
DEFINE_uint64(seed, 0x5eed, "Payload generator seed (arenarpc_press's default)");

namespace {

struct Conn {
  int fd = -1;
  std::string in;
  size_t next_request = 0;
};

int Connect(const std::string& address) {
  const size_t colon = address.rfind(':');
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::atoi(address.c_str() + colon + 1)));
  if (inet_pton(AF_INET, address.substr(0, colon).c_str(), &sa.sin_addr) != 1) return -1;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    ::close(fd);
    return -1;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

bool SendAll(int fd, const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

// Cuts complete responses off `in`; returns how many, counting non-200 ones in *errors.
// -1: not HTTP.
int TakeResponses(std::string& in, uint64_t* errors) {
  int complete = 0;
  for (;;) {
    const size_t end = in.find("\r\n\r\n");
    if (end == std::string::npos) return complete;
    if (in.compare(0, 5, "HTTP/") != 0) return -1;
    size_t length = 0;
    const size_t at = in.find("Content-Length: ");
    if (at != std::string::npos && at < end)
      length = std::strtoul(in.c_str() + at + 16, nullptr, 10);
    if (in.size() < end + 4 + length) return complete;
    if (in.compare(9, 3, "200") != 0) ++*errors;
    in.erase(0, end + 4 + length);
    ++complete;
  }
}

}  // namespace

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_connections < 1 || FLAGS_depth < 1 || FLAGS_ring < 1 || FLAGS_payload_scale < 1) {
    std::fprintf(stderr,
                 "http_echo: --connections, --depth, --ring, --payload_scale must be >= 1\n");
    return 2;
  }
  arenarpc::example::PayloadGenerator generator(FLAGS_payload_scale, FLAGS_seed);
  std::vector<std::string> requests;
  for (int i = 0; i < FLAGS_ring; ++i) {
    arenarpc::example::EchoRequest request;
    generator.Fill(&request);
    std::string json;
    if (!google::protobuf::util::MessageToJsonString(request, &json).ok()) return 1;
    requests.push_back(
        "POST /arenarpc.example.EchoService/Echo HTTP/1.1\r\nHost: bench\r\n"
        "Content-Type: application/json\r\nContent-Length: " +
        std::to_string(json.size()) + "\r\n\r\n" + json);
  }
  std::vector<Conn> conns(static_cast<size_t>(FLAGS_connections));
  std::vector<pollfd> fds;
  for (size_t i = 0; i < conns.size(); ++i) {
    conns[i].fd = Connect(FLAGS_server);
    if (conns[i].fd < 0) {
      std::fprintf(stderr, "http_echo: cannot connect to %s\n", FLAGS_server.c_str());
      return 1;
    }
    conns[i].next_request = i * 7;
    for (int d = 0; d < FLAGS_depth; ++d) {
      SendAll(conns[i].fd, requests[conns[i].next_request++ % requests.size()]);
    }
    fds.push_back({conns[i].fd, POLLIN, 0});
  }
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto measure_from = start + std::chrono::duration<double>(FLAGS_warmup_s);
  const auto stop = measure_from + std::chrono::duration<double>(FLAGS_duration_s);
  uint64_t calls = 0, errors = 0;
  char buffer[65536];
  for (auto now = Clock::now(); now < stop; now = Clock::now()) {
    if (::poll(fds.data(), fds.size(), 1000) <= 0) continue;
    const bool measuring = now >= measure_from;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Conn& c = conns[i];
      const ssize_t n = ::recv(c.fd, buffer, sizeof(buffer), 0);
      if (n <= 0) {
        std::fprintf(stderr, "http_echo: the server closed a connection\n");
        return 1;
      }
      c.in.append(buffer, static_cast<size_t>(n));
      uint64_t failed = 0;
      const int done = TakeResponses(c.in, &failed);
      if (done < 0) {
        std::fprintf(stderr, "http_echo: a reply is not HTTP\n");
        return 1;
      }
      if (measuring) {
        calls += static_cast<uint64_t>(done);
        errors += failed;
      }
      std::string batch;
      for (int k = 0; k < done; ++k) batch += requests[c.next_request++ % requests.size()];
      if (!batch.empty() && !SendAll(c.fd, batch)) return 1;
    }
  }
  const double seconds = FLAGS_duration_s;
  std::printf(
      "{\"protocol\":\"http_json\",\"qps\":%.1f,\"calls\":%llu,\"errors\":%llu,"
      "\"seconds\":%.1f}\n",
      static_cast<double>(calls) / seconds, static_cast<unsigned long long>(calls),
      static_cast<unsigned long long>(errors), seconds);
  for (const Conn& c : conns) ::close(c.fd);
  return errors == 0 ? 0 : 1;
}
