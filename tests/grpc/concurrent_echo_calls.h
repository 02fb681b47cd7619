#pragma once
// A callback client that keeps many Echo calls in flight: shared by the gRPC end-to-end tests.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "grpc_echo/grpc_echo.grpc.pb.h"

namespace arenarpc::grpc {

struct ConcurrentCallsResult {
  int ok = 0;
  int failed = 0;
  int mismatches = 0;  // OK calls whose response payload differs from the request's
};

// Makes `calls` Echo calls through `stub`'s callback API, at most `in_flight` at a time, call i
// sending requests[i % size] with the deadline `timeout(i)` from its start; returns once all
// completed.
inline ConcurrentCallsResult RunConcurrentEchoCalls(
    example::GrpcEchoService::Stub& stub, const std::vector<example::EchoRequest>& requests,
    int calls, int in_flight, const std::function<std::chrono::milliseconds(int)>& timeout) {
  std::mutex mu;
  std::condition_variable cv;
  int pending = 0, done = 0;
  ConcurrentCallsResult result;
  for (int i = 0; i < calls; ++i) {
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return pending < in_flight; });
      ++pending;
    }
    struct Call {
      ::grpc::ClientContext context;
      example::EchoResponse response;
    };
    auto call = std::make_shared<Call>();
    call->context.set_deadline(std::chrono::system_clock::now() + timeout(i));
    const example::EchoRequest* request = &requests[i % requests.size()];
    stub.async()->Echo(
        &call->context, request, &call->response, [&, call, request](::grpc::Status status) {
          const bool same = status.ok() && call->response.payload().SerializeAsString() ==
                                               request->payload().SerializeAsString();
          std::lock_guard lock(mu);
          result.ok += status.ok() ? 1 : 0;
          result.failed += status.ok() ? 0 : 1;
          result.mismatches += status.ok() && !same ? 1 : 0;
          --pending;
          ++done;
          cv.notify_all();
        });
  }
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return done == calls; });
  return result;
}

}  // namespace arenarpc::grpc
