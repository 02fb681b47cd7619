#pragma once
// The .proto files of gRPC's built-in services — grpc/health/v1/health.proto and
// grpc/reflection/{v1,v1alpha}/reflection.proto from Debian's grpc-proto package — loaded once
// from their embedded descriptor set into a private DescriptorPool. Their messages are
// DynamicMessages of that pool: nothing is added to protobuf's generated pool, so a program that
// also links C++ generated from these files (gRPC's reflection library, its own health.pb.cc)
// still starts.

#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/service.h>

#include <functional>
#include <map>
#include <string_view>

namespace arenarpc::server {

inline constexpr std::string_view kHealthService = "grpc.health.v1.Health";
inline constexpr std::string_view kReflectionV1Service = "grpc.reflection.v1.ServerReflection";
inline constexpr std::string_view kReflectionV1AlphaService =
    "grpc.reflection.v1alpha.ServerReflection";

class GrpcBuiltinProtos {
 public:
  // The pool, built on first use (thread-safe). Aborts if the embedded bytes do not load: they
  // are produced by protoc at build time, so that is a build error.
  static const GrpcBuiltinProtos& Get();

  const google::protobuf::DescriptorPool& pool() const noexcept { return pool_; }
  // A service of the pool by full name; aborts on a name that is not one of the three above.
  const google::protobuf::ServiceDescriptor& Service(std::string_view full_name) const;
  // The default instance of a message type of the pool (thread-safe).
  const google::protobuf::Message& Prototype(const google::protobuf::Descriptor* type) const;

 private:
  GrpcBuiltinProtos();
  google::protobuf::DescriptorPool pool_;
  mutable google::protobuf::DynamicMessageFactory factory_{&pool_};
};

// A google::protobuf::Service for a service of GrpcBuiltinProtos: its prototypes are the pool's
// dynamic messages; unary methods added with AddUnary() run their handler, the others (streaming
// ones, served by a GrpcStreamService around this one) are answered ENOMETHOD.
class BuiltinPoolService final : public google::protobuf::Service {
 public:
  using UnaryHandler = std::function<void(google::protobuf::RpcController* controller,
                                          const google::protobuf::Message& request,
                                          google::protobuf::Message* response)>;
  explicit BuiltinPoolService(const google::protobuf::ServiceDescriptor& descriptor)
      : descriptor_(descriptor) {}
  // `method` is the rpc's short name ("Check"); before Server::Start().
  void AddUnary(std::string_view method, UnaryHandler handler);

  const google::protobuf::ServiceDescriptor* GetDescriptor() override { return &descriptor_; }
  void CallMethod(const google::protobuf::MethodDescriptor* method,
                  google::protobuf::RpcController* controller,
                  const google::protobuf::Message* request, google::protobuf::Message* response,
                  google::protobuf::Closure* done) override;
  const google::protobuf::Message& GetRequestPrototype(
      const google::protobuf::MethodDescriptor* method) const override;
  const google::protobuf::Message& GetResponsePrototype(
      const google::protobuf::MethodDescriptor* method) const override;

 private:
  const google::protobuf::ServiceDescriptor& descriptor_;
  std::map<const google::protobuf::MethodDescriptor*, UnaryHandler> unary_;
};

}  // namespace arenarpc::server
