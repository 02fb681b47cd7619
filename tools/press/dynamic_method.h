#pragma once
// DynamicMethod: a user's RPC method loaded at run time from its .proto file (--proto,
// --proto_path, --method), with factories for its input and output messages.

#include <google/protobuf/compiler/importer.h>
#include <google/protobuf/dynamic_message.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace arenarpc::press {

class DynamicMethod {
 public:
  // proto_file: path of the .proto on disk. proto_path: import directories, ':'-separated (the
  // .proto's own directory is searched last). method: "pkg.Service.Method" (or
  // "pkg.Service/Method"). nullptr and *error (naming the flag and the problem) on failure.
  static std::unique_ptr<DynamicMethod> Load(const std::string& proto_file,
                                             const std::string& proto_path,
                                             const std::string& method, std::string* error);
  // The .proto alone, for the messages of any of its methods (--replay --proto): method() is not
  // set; pool() and NewMessage() are.
  static std::unique_ptr<DynamicMethod> LoadFile(const std::string& proto_file,
                                                 const std::string& proto_path,
                                                 std::string* error);
  const google::protobuf::DescriptorPool& pool() const { return *importer_->pool(); }
  // An empty message of `type` (a descriptor of pool()).
  std::unique_ptr<google::protobuf::Message> NewMessage(
      const google::protobuf::Descriptor& type) const;

  const google::protobuf::MethodDescriptor& method() const { return *method_; }
  // Prototypes of the input/output types: New() makes an empty message of the type.
  const google::protobuf::Message& input_prototype() const;
  const google::protobuf::Message& output_prototype() const;

 private:
  DynamicMethod() = default;

  google::protobuf::compiler::DiskSourceTree source_tree_;
  std::unique_ptr<google::protobuf::compiler::MultiFileErrorCollector> errors_;
  std::unique_ptr<google::protobuf::compiler::Importer> importer_;
  mutable google::protobuf::DynamicMessageFactory factory_;  // GetPrototype is thread-safe
  const google::protobuf::FileDescriptor* file_ = nullptr;
  const google::protobuf::MethodDescriptor* method_ = nullptr;
};

// Splits "a:b:c" into its non-empty parts.
std::vector<std::string> SplitProtoPath(std::string_view proto_path);

}  // namespace arenarpc::press
