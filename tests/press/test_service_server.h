#pragma once
// TestServiceServer: an in-process arenarpc server of the e2e TestService on 127.0.0.1:<any>, for
// the press's end-to-end tests (arenarpc_press runs as a child process against it).

#include <gtest/gtest.h>

#include <string>

#include "arenarpc/server.h"
#include "test_service.h"

namespace arenarpc::press {

class TestServiceServer : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.memory_mode = "reuse";
    options.num_threads = 2;
    ASSERT_EQ(0, server_.AddService(&service_, SERVER_DOESNT_OWN_SERVICE)) << server_.last_error();
    ASSERT_EQ(0, server_.Start("127.0.0.1:0", options)) << server_.last_error();
    address_ = "127.0.0.1:" + std::to_string(server_.listen_port());
  }
  void TearDown() override {
    server_.Stop();
    server_.Join();
  }

  // arenarpc_press pressing TestService.Echo with `proto` and `input`, 0.5 s at 200 QPS, JSON out.
  std::string PressCommand(const std::string& proto, const std::string& input,
                           const std::string& more) const {
    return std::string(PRESS_BIN) + " --server=" + address_ + " --proto=" + proto +
           " --method=arenarpc.e2e.TestService.Echo --input=" + input +
           " --qps=200 --warmup_s=0.2 --duration_s=0.5 --timeout_ms=5000 --json --live=false " +
           more;
  }

  e2e::TestServiceImpl service_;
  Server server_;
  std::string address_;
};

}  // namespace arenarpc::press
