#pragma once
// Shared helpers of the client tests: an echoing FakeServer handler and call plumbing.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "arenarpc/channel.h"
#include "arenarpc/controller.h"
#include "client_test.pb.h"
#include "fake_server.h"
#include "protocol/compression.h"

namespace arenarpc::testing {

// Decodes a request payload (compress_type honoured) into an EchoRequest.
inline bool DecodeRequest(const FakeRequest& request, example::EchoRequest* out) {
  net::BufferChain wire, plain;
  wire.Append(request.payload);
  std::string error;
  if (!protocol::Decompress(request.meta.compress_type(), wire, &plain, &error)) return false;
  return out->ParseFromString(plain.ToString());
}

inline example::EchoResponse EchoOf(const example::EchoRequest& request) {
  example::EchoResponse response;
  response.set_message(request.message());
  if (request.has_blob()) response.set_blob(request.blob());
  response.mutable_nested()->CopyFrom(request.nested());
  return response;
}

// Replies to every request with its echo (and echoes the attachment).
inline FakeServer::Handler EchoHandler() {
  return [](const std::shared_ptr<FakeConnection>& connection, FakeRequest&& request) {
    example::EchoRequest echo_request;
    if (!DecodeRequest(request, &echo_request)) {
      connection->ReplyError(request.meta.correlation_id(), 1003, "bad request");
      return;
    }
    connection->Reply(request, EchoOf(echo_request), request.attachment);
  };
}

// Connection 0 (the first the client opens) gets `first`; every later one echoes: a server whose
// first connection misbehaves, so a test can check that the client replaced it.
inline FakeServer::Handler EchoAfterFirstConnection(FakeServer::Handler first) {
  return [first = std::move(first)](const std::shared_ptr<FakeConnection>& connection,
                                    FakeRequest&& request) {
    if (connection->index() == 0) {
      first(connection, std::move(request));
    } else {
      EchoHandler()(connection, std::move(request));
    }
  };
}

// Requests are parked here; the test decides when (and whether) to answer.
struct Parked {
  std::mutex mutex;
  std::vector<std::pair<std::shared_ptr<FakeConnection>, FakeRequest>> requests;

  FakeServer::Handler Handler() {
    return [this](const std::shared_ptr<FakeConnection>& connection, FakeRequest&& request) {
      std::lock_guard lock(mutex);
      requests.emplace_back(connection, std::move(request));
    };
  }
  size_t size() {
    std::lock_guard lock(mutex);
    return requests.size();
  }
  void ReplyAll() {
    std::lock_guard lock(mutex);
    for (auto& [connection, request] : requests) {
      example::EchoRequest echo_request;
      ASSERT_TRUE(DecodeRequest(request, &echo_request));
      connection->Reply(request, EchoOf(echo_request));
    }
    requests.clear();
  }
};

inline example::EchoRequest Request(const std::string& message) {
  example::EchoRequest request;
  request.set_message(message);
  return request;
}

inline ChannelOptions TestOptions(std::string connection_type = "single") {
  ChannelOptions options;
  options.timeout_ms = 2000;  // generous: sanitizer builds on a busy 2-core machine
  options.connect_timeout_ms = 1000;
  options.connection_type = std::move(connection_type);
  return options;
}

// A closure that counts its runs and lets a test wait for them.
class CountingDone : public google::protobuf::Closure {
 public:
  void Run() override {
    std::lock_guard lock(mutex_);
    ++runs_;
    ran_on_ = std::this_thread::get_id();
    cv_.notify_all();
  }
  bool WaitForRuns(int n, std::chrono::milliseconds limit = std::chrono::seconds(5)) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, limit, [&] { return runs_ >= n; });
  }
  int runs() {
    std::lock_guard lock(mutex_);
    return runs_;
  }
  std::thread::id ran_on() {
    std::lock_guard lock(mutex_);
    return ran_on_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int runs_ = 0;
  std::thread::id ran_on_;
};

}  // namespace arenarpc::testing
