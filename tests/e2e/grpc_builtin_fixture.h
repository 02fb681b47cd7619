#pragma once
// What the tests of the built-in gRPC services (grpc_reflection_test.cc, grpc_health_test.cc)
// share: a server with TestService and StampService (a service whose .proto imports others), the
// descriptor set the Python client builds its messages from, and a command run in the background
// whose output the test watches as it comes.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "../press/run_shell.h"
#include "../press/temp_dir.h"
#include "grpc_reflection_test.pb.h"
#include "server_fixture.h"

namespace arenarpc::e2e {

// Stamp: message + "@" + at.seconds.
class StampServiceImpl final : public reflected::StampService {
 public:
  void Stamp(google::protobuf::RpcController*, const reflected::StampRequest* request,
             TestResponse* response, google::protobuf::Closure* done) override {
    response->set_message(request->message() + "@" + std::to_string(request->at().seconds()));
    done->Run();
  }
};

// grpc-proto's health and reflection .proto files as a FileDescriptorSet, made once per run in a
// directory removed at exit.
inline const std::string& BuiltinDescriptorSet() {
  static const press::TempDir dir;
  static const std::string path = [] {
    const std::string file = dir.path() + "/grpc_builtin.binpb";
    const press::ShellOutput protoc = press::RunShell(
        "/usr/bin/protoc --include_imports --descriptor_set_out=" + file +
        " -I/usr/share/grpc-proto grpc/health/v1/health.proto grpc/reflection/v1/reflection.proto"
        " grpc/reflection/v1alpha/reflection.proto");
    return protoc.exit_code == 0 && !dir.path().empty() ? file : std::string();
  }();
  return path;
}

// "timeout 60 python3 grpc_reflection_python_client.py PORT SET <args>"
inline std::string PythonClient(int port, const std::string& args) {
  return "timeout 60 /usr/bin/python3 " ARENARPC_SOURCE_DIR
         "/tests/e2e/grpc_reflection_python_client.py " +
         std::to_string(port) + " " + BuiltinDescriptorSet() + " " + args;
}

// A shell command running on its own thread; its output (stdout and stderr) gathers as it comes.
class BackgroundCommand {
 public:
  explicit BackgroundCommand(const std::string& command)
      : thread_([this, command] {
          FILE* pipe = popen((command + " 2>&1").c_str(), "r");
          if (pipe == nullptr) return;
          char buffer[4096];
          while (fgets(buffer, sizeof(buffer), pipe) != nullptr) {
            std::lock_guard lock(mutex_);
            output_ += buffer;
          }
          pclose(pipe);
        }) {}
  ~BackgroundCommand() { thread_.join(); }  // the command ends by itself (timeout 60 at most)
  BackgroundCommand(const BackgroundCommand&) = delete;
  BackgroundCommand& operator=(const BackgroundCommand&) = delete;

  std::string output() const {
    std::lock_guard lock(mutex_);
    return output_;
  }
  // Waits until `text` occurs `count` times in the output. false on timeout.
  bool WaitFor(std::string_view text, int count = 1,
               std::chrono::milliseconds timeout = std::chrono::seconds(20)) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const std::string out = output();
      int seen = 0;
      for (size_t at = out.find(text); at != std::string::npos; at = out.find(text, at + 1)) {
        ++seen;
      }
      if (seen >= count) return true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

 private:
  mutable std::mutex mutex_;
  std::string output_;
  std::thread thread_;  // last: starts once the members it writes exist
};

class GrpcBuiltinTest : public ServerTest {
 protected:
  void TearDown() override {
    ServerTest::TearDown();
    stamp_.reset();
  }
  // TestService and StampService with `options` (memory_mode: the test's parameter).
  void StartStampServer(ServerOptions options = {}) {
    options.memory_mode = GetParam();
    if (options.num_threads == 0) options.num_threads = 2;
    service_ = std::make_unique<TestServiceImpl>();
    stamp_ = std::make_unique<StampServiceImpl>();
    server_ = std::make_unique<Server>();
    ASSERT_EQ(0, server_->AddService(service_.get(), SERVER_DOESNT_OWN_SERVICE));
    ASSERT_EQ(0, server_->AddService(stamp_.get(), SERVER_DOESNT_OWN_SERVICE));
    ASSERT_EQ(0, server_->Start("127.0.0.1:0", options)) << server_->last_error();
    port_ = server_->listen_port();
    ASSERT_FALSE(BuiltinDescriptorSet().empty());
  }
  std::unique_ptr<StampServiceImpl> stamp_;
};

}  // namespace arenarpc::e2e
