// Writes one gRPC request of the echo workload as it goes in a DATA frame (the 5-byte message
// prefix, then the serialized EchoRequest), for h2load's -d (bench/h2load_grpc.sh). h2load sends
// one body over and over, so of the 64 payloads arenarpc_press cycles through (same seed), the
// one whose size is closest to their mean is written.
// Usage: grpc_request_file <payload_scale> <out file> [seed]
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "echo/payload_generator.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: grpc_request_file <payload_scale> <out file> [seed]\n";
    return 2;
  }
  const int scale = std::atoi(argv[1]);
  const uint64_t seed = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 24301;
  arenarpc::example::PayloadGenerator generator(scale, seed);
  std::vector<std::string> pool(64);
  double mean = 0;
  for (std::string& bytes : pool) {
    arenarpc::example::EchoRequest request;
    generator.Fill(&request);
    bytes = request.SerializeAsString();
    mean += static_cast<double>(bytes.size()) / static_cast<double>(pool.size());
  }
  const std::string& bytes = *std::ranges::min_element(pool, {}, [mean](const std::string& b) {
    return std::abs(static_cast<double>(b.size()) - mean);
  });
  const uint32_t n = static_cast<uint32_t>(bytes.size());
  const char prefix[5] = {0, static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                          static_cast<char>(n >> 8), static_cast<char>(n)};
  std::ofstream out(argv[2], std::ios::binary);
  out.write(prefix, 5).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::cerr << "cannot write " << argv[2] << "\n";
    return 1;
  }
  std::cout << bytes.size() << " bytes of EchoRequest (payload_scale " << scale << ", mean of 64: "
            << static_cast<long>(mean) << ")\n";
  return 0;
}
