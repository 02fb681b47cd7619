#include "server/grpc_builtin_protos.h"

#include <google/protobuf/descriptor.pb.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "arenarpc/controller.h"
#include "arenarpc/error_codes.h"

namespace arenarpc::server {

// build/.../gen/grpc_builtin_descriptors.cc (src/CMakeLists.txt): a FileDescriptorSet.
extern const unsigned char kGrpcBuiltinDescriptorSet[];
extern const std::size_t kGrpcBuiltinDescriptorSet_size;

namespace {

[[noreturn]] void Die(const std::string& why) {
  std::cerr << "arenarpc: gRPC's built-in protos: " << why << std::endl;
  std::abort();
}

}  // namespace

GrpcBuiltinProtos::GrpcBuiltinProtos() {
  google::protobuf::FileDescriptorSet set;
  if (!set.ParseFromArray(kGrpcBuiltinDescriptorSet,
                          static_cast<int>(kGrpcBuiltinDescriptorSet_size))) {
    Die("the embedded FileDescriptorSet does not parse");
  }
  for (const google::protobuf::FileDescriptorProto& file : set.file()) {  // imports come first
    if (pool_.BuildFile(file) == nullptr) Die("cannot build " + file.name());
  }
  factory_.SetDelegateToGeneratedFactory(false);
}

const GrpcBuiltinProtos& GrpcBuiltinProtos::Get() {
  static const GrpcBuiltinProtos* const protos = new GrpcBuiltinProtos();  // never destroyed:
  return *protos;  // dynamic messages may outlive static destruction order
}

const google::protobuf::ServiceDescriptor& GrpcBuiltinProtos::Service(
    std::string_view full_name) const {
  const google::protobuf::ServiceDescriptor* service =
      pool_.FindServiceByName(std::string(full_name));
  if (service == nullptr) Die("no service " + std::string(full_name));
  return *service;
}

const google::protobuf::Message& GrpcBuiltinProtos::Prototype(
    const google::protobuf::Descriptor* type) const {
  return *factory_.GetPrototype(type);
}

void BuiltinPoolService::AddUnary(std::string_view method, UnaryHandler handler) {
  const google::protobuf::MethodDescriptor* found =
      descriptor_.FindMethodByName(std::string(method));
  if (found == nullptr) Die("no rpc " + std::string(method) + " in " + descriptor_.full_name());
  unary_[found] = std::move(handler);
}

void BuiltinPoolService::CallMethod(const google::protobuf::MethodDescriptor* method,
                                    google::protobuf::RpcController* controller,
                                    const google::protobuf::Message* request,
                                    google::protobuf::Message* response,
                                    google::protobuf::Closure* done) {
  auto it = unary_.find(method);
  if (it == unary_.end()) {
    static_cast<Controller*>(controller)
        ->SetFailed(ENOMETHOD, "no implementation of " + method->full_name());
  } else {
    it->second(controller, *request, response);
  }
  done->Run();
}

const google::protobuf::Message& BuiltinPoolService::GetRequestPrototype(
    const google::protobuf::MethodDescriptor* method) const {
  return GrpcBuiltinProtos::Get().Prototype(method->input_type());
}

const google::protobuf::Message& BuiltinPoolService::GetResponsePrototype(
    const google::protobuf::MethodDescriptor* method) const {
  return GrpcBuiltinProtos::Get().Prototype(method->output_type());
}

}  // namespace arenarpc::server
