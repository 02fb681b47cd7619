#pragma once
// What the gRPC end-to-end tests share: the (mode, request path) parameters, installing a
// ServiceMemory on a service, the shutdown check that every holder came back, and a callback
// client that keeps many Echo calls in flight.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "arenarpc/grpc_memory/service_memory.h"
#include "grpc_echo/echo_service.h"
#include "grpc_echo/grpc_echo.grpc.pb.h"

namespace arenarpc::grpc_memory {

// (mode, request path): "merge" = ServiceMemory::Serve, "grpc" = SetMessageAllocatorFor_Echo.
using Param = std::tuple<std::string, std::string>;

inline std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  return std::get<0>(info.param) + "_" + std::get<1>(info.param);
}

// Puts `memory` behind `service`'s Echo through the given request path.
template <class Service>
void ServeEcho(ServiceMemory& memory, Service& service, const std::string& path) {
  std::string error;
  if (path == "merge") {
    example::LinkGrpcEchoProto();
    ASSERT_EQ(0, memory.Serve(service, "arenarpc.example.GrpcEchoService.Echo", &Service::Echo,
                              &error))
        << error;
  } else {
    service.SetMessageAllocatorFor_Echo(
        memory.allocator<example::EchoRequest, example::EchoResponse>(&error));
    ASSERT_EQ(error, "");
  }
}

// Shuts `server` down (cancelling calls in flight after `grace`), then checks that every holder
// and every pair came back exactly once.
inline HolderStats ShutDownAndExpectAllReleased(::grpc::Server& server,
                                                const ServiceMemory& service_memory,
                                                std::chrono::milliseconds grace) {
  server.Shutdown(std::chrono::system_clock::now() + grace);
  server.Wait();
  const HolderStats holders = service_memory.holder_stats();
  const memory::MemoryStats stats = service_memory.memory_stats();
  EXPECT_EQ(holders.allocated, holders.released);
  EXPECT_EQ(stats.acquired, stats.released);
  EXPECT_EQ(stats.acquired, holders.allocated);
  EXPECT_LE(holders.released_at_serialize, holders.released);
  return holders;
}

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

}  // namespace arenarpc::grpc_memory
