#pragma once
// gRPC server reflection (grpc.reflection.v1 and v1alpha ServerReflection, one bidirectional
// stream ServerReflectionInfo each) as a built-in service (docs/grpc.md, "Reflection"). What it
// reveals is the ReflectionIndex: the services the server registers and the .proto files that
// declare them, with every file they import — nothing else that happens to be linked in.
// Answers as gRPC's reflection does: list_services; file_by_filename, file_containing_symbol and
// file_containing_extension with the file first and then the files it imports that this stream
// has not been sent yet; all_extension_numbers_of_type; NOT_FOUND (or INVALID_ARGUMENT for a
// request that asks nothing) as an error_response, the stream going on.

#include <google/protobuf/descriptor.h>
#include <google/protobuf/service.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace arenarpc::server {

class ReflectionIndex {
 public:
  // The services and the files declaring them (with their imports). Once, before the server
  // serves; only read after.
  void Build(const std::vector<const google::protobuf::ServiceDescriptor*>& services);

  const std::vector<std::string>& service_names() const noexcept { return service_names_; }
  // nullptr when not in the index.
  const google::protobuf::FileDescriptor* FindFile(std::string_view name) const;
  const google::protobuf::FileDescriptor* FindFileContainingSymbol(std::string_view symbol) const;
  const google::protobuf::Descriptor* FindMessageType(std::string_view name) const;
  const google::protobuf::FieldDescriptor* FindExtension(const google::protobuf::Descriptor& type,
                                                         int number) const;
  std::vector<int> ExtensionNumbers(const google::protobuf::Descriptor& type) const;

 private:
  bool Holds(const google::protobuf::FileDescriptor* file) const;

  std::vector<std::string> service_names_;  // sorted
  std::map<std::string, const google::protobuf::FileDescriptor*, std::less<>> files_;
  std::vector<const google::protobuf::DescriptorPool*> pools_;  // of the files, each once
};

// `service_full_name`: kReflectionV1Service or kReflectionV1AlphaService.
std::shared_ptr<google::protobuf::Service> MakeGrpcReflectionService(
    std::string_view service_full_name, std::shared_ptr<const ReflectionIndex> index);

}  // namespace arenarpc::server
