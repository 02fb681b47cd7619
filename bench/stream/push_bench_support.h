#pragma once
// Shared by the stream push benchmarks: the process's CPU seconds, and gRPC C++'s server-streaming
// Push handler (when gRPC's headers are in).

#include <sys/resource.h>

#include <cstdint>
#include <string>

namespace streambench {

inline double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

#ifdef GRPCPP_GRPCPP_H
// A sync server-streaming method: request->messages() messages of request->message_bytes() bytes.
class GrpcPushService final : public Push::Service {
  grpc::Status Push(grpc::ServerContext*, const PushRequest* request,
                    grpc::ServerWriter<PushMessage>* writer) override {
    PushMessage message;
    message.set_data(std::string(static_cast<size_t>(request->message_bytes()), 'x'));
    for (int64_t i = 0; i < request->messages(); ++i) {
      if (!writer->Write(message)) break;
    }
    return grpc::Status::OK;
  }
};
#endif

}  // namespace streambench
