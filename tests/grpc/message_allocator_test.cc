// arenarpc::grpc_memory::MessageAllocator / ServiceMemory without a server: what gRPC's handler does with
// an allocator (AllocateMessages, fill, Release on some thread), for every strategy.
#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/grpc_memory/message_allocator.h"
#include "arenarpc/grpc_memory/service_memory.h"
#include "echo/payload_generator.h"
#include "grpc_echo/echo_service.h"

namespace arenarpc::grpc_memory {
namespace {

using example::EchoRequest;
using example::EchoResponse;

class AllocatorPerStrategy : public ::testing::TestWithParam<const char*> {};

TEST_P(AllocatorPerStrategy, HoldersAreEmptyFilledAndReleasedOnce) {
  std::string error;
  auto alloc = allocator<EchoRequest, EchoResponse>(GetParam(), {}, &error);
  ASSERT_NE(alloc, nullptr) << error;
  EXPECT_EQ(alloc->memory().name(), GetParam());
  example::PayloadGenerator generator(3);
  for (int i = 0; i < 20; ++i) {
    auto* holder = alloc->Allocate();
    ASSERT_NE(holder->request(), nullptr);
    ASSERT_NE(holder->response(), nullptr);
    // Empty every time, whatever the previous call left behind. The response is ready to be
    // serialized as handed out (the adapter prepared it); a reused request may still carry its
    // kept, empty payload until parsed (gRPC's ParseFrom clears it first, as here).
    EXPECT_EQ(holder->request()->payload().result_size(), 0);
    EXPECT_EQ(holder->response()->payload().result_size(), 0);
    EXPECT_FALSE(holder->response()->has_payload());
    holder->request()->Clear();
    EXPECT_EQ(holder->request()->ByteSizeLong(), 0u);
    EXPECT_EQ(holder->response()->ByteSizeLong(), 0u);
    EXPECT_FALSE(holder->request()->has_payload());
    generator.Fill(holder->request());
    holder->response()->mutable_payload()->CopyFrom(holder->request()->payload());
    EXPECT_EQ(holder->response()->payload().SerializeAsString(),
              holder->request()->payload().SerializeAsString());
    holder->Release();
  }
  const HolderStats holders = alloc->holder_stats();
  EXPECT_EQ(holders.allocated, 20u);
  EXPECT_EQ(holders.released, 20u);
  const memory::MemoryStats stats = alloc->memory_stats();
  EXPECT_EQ(stats.acquired, 20u);
  EXPECT_EQ(stats.released, 20u);
}

// gRPC may call Release() on another thread than AllocateMessages(); many threads at once.
TEST_P(AllocatorPerStrategy, ReleaseFromOtherThreads) {
  ServiceMemory memory(GetParam());
  std::string error;
  auto* alloc = memory.allocator<EchoRequest, EchoResponse>(&error);
  ASSERT_NE(alloc, nullptr) << error;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<::grpc::MessageHolder<EchoRequest, EchoResponse>*> mine;
      for (int i = 0; i < kPerThread; ++i) {
        auto* holder = alloc->AllocateMessages();
        holder->request()->add_message("call " + std::to_string(t) + "/" + std::to_string(i));
        mine.push_back(holder);
      }
      // Hand half of them to a fresh thread to release, release the rest here.
      std::vector<::grpc::MessageHolder<EchoRequest, EchoResponse>*> other(
          mine.begin(), mine.begin() + kPerThread / 2);
      std::thread releaser([&other] {
        for (auto* holder : other) holder->Release();
      });
      for (size_t i = kPerThread / 2; i < mine.size(); ++i) mine[i]->Release();
      releaser.join();
    });
  }
  for (auto& thread : threads) thread.join();
  const HolderStats holders = memory.holder_stats();
  EXPECT_EQ(holders.allocated, uint64_t{kThreads * kPerThread});
  EXPECT_EQ(holders.released, holders.allocated);
  const memory::MemoryStats stats = memory.memory_stats();
  EXPECT_EQ(stats.acquired, stats.released);
  EXPECT_EQ(stats.acquired, uint64_t{kThreads * kPerThread});
}

INSTANTIATE_TEST_SUITE_P(Strategies, AllocatorPerStrategy,
                         ::testing::Values("heap", "arena", "paged", "reuse"));

TEST(MessageAllocator, DefaultModeHasNoAllocator) {
  std::string error;
  EXPECT_EQ((allocator<EchoRequest, EchoResponse>("default", {}, &error)), nullptr);
  EXPECT_EQ(error, "");  // not an error: gRPC's own allocation
  ServiceMemory memory("default");
  EXPECT_TRUE(memory.is_default());
  EXPECT_EQ((memory.allocator<EchoRequest, EchoResponse>(&error)), nullptr);
  EXPECT_EQ(error, "");
  EXPECT_EQ(memory.memory_stats().acquired, 0u);
  EXPECT_EQ(memory.holder_stats().allocated, 0u);
}

TEST(MessageAllocator, UnknownModeAndBadOptionsAreReportedClearly) {
  std::string error;
  std::unique_ptr<ServiceMemory> memory;
  EXPECT_NO_THROW(memory = ServiceMemory::Create("pool", {}, &error));
  EXPECT_EQ(memory, nullptr);
  EXPECT_NE(error.find("unknown memory mode 'pool'"), std::string::npos) << error;
  memory::MemoryOptions bad;
  bad.page_size = 1000;  // not a power of two
  error.clear();
  EXPECT_NO_THROW(memory = ServiceMemory::Create("paged", bad, &error));
  EXPECT_EQ(memory, nullptr);
  EXPECT_NE(error.find("page_size 1000"), std::string::npos) << error;
  // Flags are validated in "default" mode too, so a typo fails fast whatever the mode.
  error.clear();
  EXPECT_EQ(ServiceMemory::Create("default", bad, &error), nullptr);
  EXPECT_NE(error.find("page_size 1000"), std::string::npos) << error;
  error.clear();
  EXPECT_EQ(MakeStrategy("default", {}, &error), nullptr);
  EXPECT_NE(error.find("mode 'default' is gRPC's own allocation"), std::string::npos) << error;
  error.clear();
  EXPECT_EQ((allocator<EchoRequest, EchoResponse>("paged", bad, &error)), nullptr);
  EXPECT_NE(error.find("page_size 1000"), std::string::npos) << error;
  error.clear();
  memory = ServiceMemory::Create("heap", {}, &error);
  ASSERT_NE(memory, nullptr) << error;
  EXPECT_EQ((memory->allocator<EchoRequest, EchoResponse>("pool", &error)), nullptr);
  EXPECT_NE(error.find("unknown memory mode 'pool'"), std::string::npos) << error;
  // Constructors have no return value: they throw what Create() reports.
  EXPECT_THROW(ServiceMemory("pool"), std::invalid_argument);
  EXPECT_THROW(ServiceMemory("paged", bad), std::invalid_argument);
  EXPECT_THROW((MessageAllocator<EchoRequest, EchoResponse>(nullptr)), std::invalid_argument);
}

// The throwing spellings, deprecated for one release.
TEST(MessageAllocator, DeprecatedThrowingSpellingsStillThrow) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  EXPECT_THROW(MakeStrategy("default", {}), std::invalid_argument);
  EXPECT_THROW((allocator<EchoRequest, EchoResponse>("pool")), std::invalid_argument);
  EXPECT_EQ((allocator<EchoRequest, EchoResponse>("default")), nullptr);
  ServiceMemory memory("heap");
  EXPECT_THROW((memory.allocator<EchoRequest, EchoResponse>("pool")), std::invalid_argument);
  example::GrpcEchoServiceImpl service;
  EXPECT_THROW(memory.Serve(service, "no.Such.Method", &example::GrpcEchoServiceImpl::Echo),
               std::invalid_argument);
  EXPECT_NO_THROW(memory.Serve(service, "arenarpc.example.GrpcEchoService.Echo",
                               &example::GrpcEchoServiceImpl::Echo, "reuse"));
#pragma GCC diagnostic pop
}

TEST(ServiceMemory, SharesOneStrategyBetweenAllocators) {
  ServiceMemory memory(memory::MakeMessageMemory(memory::MemoryMode::kReuse));
  EXPECT_EQ(memory.mode(), "reuse");
  auto* a = memory.allocator<EchoRequest, EchoResponse>(nullptr);
  auto* b = memory.allocator<EchoRequest, EchoResponse>(nullptr);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(a, b);
  a->AllocateMessages()->Release();
  b->AllocateMessages()->Release();
  EXPECT_EQ(memory.memory_stats().acquired, 2u);
  EXPECT_EQ(memory.holder_stats().allocated, 2u);
  EXPECT_EQ(memory.holder_stats().released, 2u);
}

// The error a set-up call reports ("" if it succeeds): -1 and the text, nothing thrown.
template <class F>
std::string ErrorOf(F set_up) {
  std::string error;
  int rc = 0;
  EXPECT_NO_THROW(rc = set_up(&error));
  EXPECT_EQ(rc, error.empty() ? 0 : -1) << error;
  return error;
}

constexpr const char* kEcho = "arenarpc.example.GrpcEchoService.Echo";

TEST(ServiceMemory, ServeRejectsAMethodOfOtherTypes) {
  ServiceMemory memory("reuse");
  // Echo takes EchoRequest and returns EchoResponse; claiming other types must fail, not corrupt.
  struct Wrong : example::GrpcEchoService::CallbackService {
    ::grpc::ServerUnaryReactor* Swapped(::grpc::CallbackServerContext*, const EchoResponse*,
                                        EchoRequest*) {
      return nullptr;
    }
  };
  Wrong wrong;
  EXPECT_EQ(ErrorOf([&](std::string* e) { return memory.Serve(wrong, kEcho, &Wrong::Swapped, e); }),
            "arenarpc::grpc_memory::ServiceMemory::Serve: rpc 'arenarpc.example.GrpcEchoService.Echo' "
            "takes arenarpc.example.EchoRequest and returns arenarpc.example.EchoResponse, but "
            "the handler takes arenarpc.example.EchoResponse and returns "
            "arenarpc.example.EchoRequest");
}

TEST(ServiceMemory, ServeRejectsAnUnknownName) {
  ServiceMemory memory("reuse");
  example::GrpcEchoServiceImpl service;
  for (const char* name : {"Echo", "arenarpc.example.GrpcEchoService.Search",
                           "arenarpc.example.GrpcEchoService/Echo", ""}) {
    EXPECT_EQ(ErrorOf([&](std::string* e) {
                return memory.Serve(service, name, &example::GrpcEchoServiceImpl::Echo, e);
              }),
              std::string("arenarpc::grpc_memory::ServiceMemory::Serve: no rpc '") + name +
                  "' in the linked .proto files (name it as package.Service.Method; the "
                  "generated .pb.cc of the file declaring the service must be linked in)");
  }
  EXPECT_EQ(memory.holder_stats().allocated, 0u);
}

TEST(ServiceMemory, ServeBindsByNameWithPerMethodModes) {
  ServiceMemory memory("heap");
  example::GrpcEchoServiceImpl service;
  std::string error;
  EXPECT_EQ(0, memory.Serve(service, kEcho, &example::GrpcEchoServiceImpl::Echo, "reuse", &error));
  EXPECT_EQ(0, memory.Serve(service, kEcho, &example::GrpcEchoServiceImpl::Echo, &error));
  EXPECT_EQ(0,
            memory.Serve(service, kEcho, &example::GrpcEchoServiceImpl::Echo, "default", &error));
  EXPECT_EQ(error, "");
  EXPECT_EQ(memory.mode(), "heap");
  auto* a = memory.allocator<EchoRequest, EchoResponse>("reuse", &error);
  ASSERT_NE(a, nullptr) << error;
  EXPECT_EQ(a->memory().name(), "reuse");
  a->AllocateMessages()->Release();
  EXPECT_EQ(memory.memory_stats("reuse").acquired, 1u);
  EXPECT_EQ(memory.memory_stats().acquired, 0u);  // the default (heap) strategy was not used
}

TEST(ServiceMemory, BadModesAreReportedNotFatal) {
  std::string error;
  EXPECT_TRUE(ServiceMemory::IsValidMode("reuse", &error));
  EXPECT_TRUE(ServiceMemory::IsValidMode("default", &error));
  EXPECT_FALSE(ServiceMemory::IsValidMode("resue", &error));
  EXPECT_EQ(error, "unknown memory mode 'resue' (valid: default, heap, arena, paged, reuse, auto)");
  EXPECT_EQ(ErrorOf([](std::string* e) { return ServiceMemory::Create("resue", {}, e) ? 0 : -1; }),
            "arenarpc::grpc_memory: unknown memory mode 'resue' (valid: default, heap, arena, paged, "
            "reuse, auto)");
  ServiceMemory memory("default");
  example::GrpcEchoServiceImpl service;
  EXPECT_EQ(ErrorOf([&](std::string* e) {
              return memory.Serve(service, kEcho, &example::GrpcEchoServiceImpl::Echo, "arenas", e);
            }),
            "arenarpc::grpc_memory: unknown memory mode 'arenas' (valid: default, heap, arena, paged, "
            "reuse, auto)");
}

}  // namespace
}  // namespace arenarpc::grpc_memory
