#pragma once
// The benchmark's echo handler (docs/benchmarks.md): the response's payload is a full copy of the
// request's payload (CopyFrom), nothing else. Shared by echo_server and the tests.

#include "echo/echo.pb.h"

namespace arenarpc::example {

class EchoServiceImpl final : public EchoService {
 public:
  // from_scratch: build the response's payload field by field (add_*(), each string assigned)
  // instead of one CopyFrom: a handler that makes its own response (bench/compare_modes
  // --workload scratch). Same bytes either way.
  explicit EchoServiceImpl(bool from_scratch = false) : from_scratch_(from_scratch) {}
  void Echo(google::protobuf::RpcController* controller, const EchoRequest* request,
            EchoResponse* response, google::protobuf::Closure* done) override;

 private:
  const bool from_scratch_;
};

// The copy handler on the `optional` schema: the response's payload is a CopyFrom of the request's.
class OptionalEchoServiceImpl final : public OptionalEchoService {
 public:
  void Echo(google::protobuf::RpcController* controller, const OptionalEchoRequest* request,
            OptionalEchoResponse* response, google::protobuf::Closure* done) override;
};

}  // namespace arenarpc::example
