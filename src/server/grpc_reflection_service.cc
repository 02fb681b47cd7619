#include "server/grpc_reflection_service.h"

#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/message.h>

#include <algorithm>
#include <deque>
#include <set>
#include <utility>

#include "arenarpc/grpc_stream.h"
#include "server/grpc_builtin_protos.h"

namespace arenarpc::server {

namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::FileDescriptor;
using google::protobuf::Message;

// gRPC status codes an error_response carries.
constexpr int kNotFound = 5;
constexpr int kInvalidArgument = 3;

void AddFileWithImports(const FileDescriptor* file, std::set<std::string>* sent,
                        std::vector<const FileDescriptor*>* out) {
  std::deque<const FileDescriptor*> queue{file};
  std::set<const FileDescriptor*> visited{file};
  while (!queue.empty()) {
    const FileDescriptor* next = queue.front();
    queue.pop_front();
    // The file asked for goes out every time; an import once per stream (as grpc-go).
    const bool fresh = sent->insert(next->name()).second;
    if (next == file || fresh) out->push_back(next);
    for (int i = 0; i < next->dependency_count(); ++i) {
      if (visited.insert(next->dependency(i)).second) queue.push_back(next->dependency(i));
    }
  }
}

// One ServerReflectionRequest -> its ServerReflectionResponse, through protobuf reflection (the
// messages are dynamic ones of v1 or v1alpha: same fields in both).
class Answerer {
 public:
  Answerer(const ReflectionIndex& index, std::set<std::string>* sent)
      : index_(index), sent_(sent) {}

  void Answer(const Message& request, Message* response) {
    const Descriptor& in = *request.GetDescriptor();
    const auto* in_reflection = request.GetReflection();
    const auto* out = response->GetReflection();
    const Descriptor& out_type = *response->GetDescriptor();
    out->SetString(response, out_type.FindFieldByName("valid_host"),
                   in_reflection->GetString(request, in.FindFieldByName("host")));
    out->MutableMessage(response, out_type.FindFieldByName("original_request"))
        ->CopyFrom(request);
    const FieldDescriptor* asked =
        in_reflection->GetOneofFieldDescriptor(request, in.FindOneofByName("message_request"));
    if (asked == nullptr) {
      return Error(response, kInvalidArgument,
                   "the request sets none of file_by_filename, file_containing_symbol, "
                   "file_containing_extension, all_extension_numbers_of_type, list_services");
    }
    const std::string& name = asked->name();
    if (name == "list_services") return ListServices(response);
    if (name == "file_containing_extension") {
      const Message& ask = in_reflection->GetMessage(request, asked);
      const Descriptor& ask_type = *ask.GetDescriptor();
      const Descriptor* type = index_.FindMessageType(ask.GetReflection()->GetString(
          ask, ask_type.FindFieldByName("containing_type")));
      if (type == nullptr) return Error(response, kNotFound, "Type not found.");
      const FieldDescriptor* extension = index_.FindExtension(
          *type, ask.GetReflection()->GetInt32(ask, ask_type.FindFieldByName("extension_number")));
      if (extension == nullptr) return Error(response, kNotFound, "Extension not found.");
      return Files(response, extension->file());
    }
    const std::string text = in_reflection->GetString(request, asked);
    if (name == "file_by_filename") {
      const FileDescriptor* file = index_.FindFile(text);
      if (file == nullptr) return Error(response, kNotFound, "File not found.");
      return Files(response, file);
    }
    if (name == "file_containing_symbol") {
      const FileDescriptor* file = index_.FindFileContainingSymbol(text);
      if (file == nullptr) return Error(response, kNotFound, "Symbol not found.");
      return Files(response, file);
    }
    // all_extension_numbers_of_type
    const Descriptor* type = index_.FindMessageType(text);
    if (type == nullptr) return Error(response, kNotFound, "Type not found.");
    Message* numbers = Mutable(response, "all_extension_numbers_response");
    const Descriptor& numbers_type = *numbers->GetDescriptor();
    numbers->GetReflection()->SetString(numbers, numbers_type.FindFieldByName("base_type_name"),
                                        type->full_name());
    for (int number : index_.ExtensionNumbers(*type)) {
      numbers->GetReflection()->AddInt32(
          numbers, numbers_type.FindFieldByName("extension_number"), number);
    }
  }

 private:
  static Message* Mutable(Message* response, const char* field) {
    return response->GetReflection()->MutableMessage(
        response, response->GetDescriptor()->FindFieldByName(field));
  }

  static void Error(Message* response, int code, std::string text) {
    Message* error = Mutable(response, "error_response");
    const Descriptor& type = *error->GetDescriptor();
    error->GetReflection()->SetInt32(error, type.FindFieldByName("error_code"), code);
    error->GetReflection()->SetString(error, type.FindFieldByName("error_message"),
                                      std::move(text));
  }

  void ListServices(Message* response) const {
    Message* list = Mutable(response, "list_services_response");
    const FieldDescriptor* services = list->GetDescriptor()->FindFieldByName("service");
    for (const std::string& name : index_.service_names()) {
      Message* service = list->GetReflection()->AddMessage(list, services);
      service->GetReflection()->SetString(
          service, service->GetDescriptor()->FindFieldByName("name"), name);
    }
  }

  void Files(Message* response, const FileDescriptor* file) {
    std::vector<const FileDescriptor*> files;
    AddFileWithImports(file, sent_, &files);
    Message* out = Mutable(response, "file_descriptor_response");
    const FieldDescriptor* field = out->GetDescriptor()->FindFieldByName("file_descriptor_proto");
    for (const FileDescriptor* each : files) {
      google::protobuf::FileDescriptorProto proto;
      each->CopyTo(&proto);
      each->CopyJsonNameTo(&proto);
      out->GetReflection()->AddString(out, field, proto.SerializeAsString());
    }
  }

  const ReflectionIndex& index_;
  std::set<std::string>* sent_;
};

void ServeReflection(const ReflectionIndex& index, GrpcServerStream& stream) {
  std::set<std::string> sent;  // files this stream was sent, by name
  Answerer answerer(index, &sent);
  GrpcStreamMessages messages;
  while (stream.Read(&messages)) {
    answerer.Answer(*messages.request(), messages.response());
    if (!stream.Write(std::move(messages))) return;
  }
}

struct ReflectionService {
  ReflectionService(const google::protobuf::ServiceDescriptor& descriptor,
                    std::shared_ptr<const ReflectionIndex> index)
      : unary(descriptor), streams(&descriptor, &unary) {
    streams.AddMethod("ServerReflectionInfo", [index](GrpcServerStream& stream) {
      ServeReflection(*index, stream);
    });
  }
  BuiltinPoolService unary;
  GrpcStreamService streams;
};

}  // namespace

void ReflectionIndex::Build(
    const std::vector<const google::protobuf::ServiceDescriptor*>& services) {
  std::vector<const FileDescriptor*> stack;
  for (const google::protobuf::ServiceDescriptor* service : services) {
    service_names_.push_back(service->full_name());
    stack.push_back(service->file());
  }
  std::sort(service_names_.begin(), service_names_.end());
  service_names_.erase(std::unique(service_names_.begin(), service_names_.end()),
                       service_names_.end());
  while (!stack.empty()) {
    const FileDescriptor* file = stack.back();
    stack.pop_back();
    if (!files_.emplace(file->name(), file).second) continue;
    if (std::find(pools_.begin(), pools_.end(), file->pool()) == pools_.end()) {
      pools_.push_back(file->pool());
    }
    for (int i = 0; i < file->dependency_count(); ++i) stack.push_back(file->dependency(i));
  }
}

bool ReflectionIndex::Holds(const FileDescriptor* file) const {
  if (file == nullptr) return false;
  auto it = files_.find(file->name());
  return it != files_.end() && it->second == file;
}

const FileDescriptor* ReflectionIndex::FindFile(std::string_view name) const {
  auto it = files_.find(name);
  return it == files_.end() ? nullptr : it->second;
}

const FileDescriptor* ReflectionIndex::FindFileContainingSymbol(std::string_view symbol) const {
  for (const google::protobuf::DescriptorPool* pool : pools_) {
    const FileDescriptor* file = pool->FindFileContainingSymbol(std::string(symbol));
    if (Holds(file)) return file;
  }
  return nullptr;
}

const Descriptor* ReflectionIndex::FindMessageType(std::string_view name) const {
  for (const google::protobuf::DescriptorPool* pool : pools_) {
    const Descriptor* type = pool->FindMessageTypeByName(std::string(name));
    if (type != nullptr && Holds(type->file())) return type;
  }
  return nullptr;
}

const FieldDescriptor* ReflectionIndex::FindExtension(const Descriptor& type, int number) const {
  const FieldDescriptor* extension = type.file()->pool()->FindExtensionByNumber(&type, number);
  return extension != nullptr && Holds(extension->file()) ? extension : nullptr;
}

std::vector<int> ReflectionIndex::ExtensionNumbers(const Descriptor& type) const {
  std::vector<const FieldDescriptor*> extensions;
  type.file()->pool()->FindAllExtensions(&type, &extensions);
  std::vector<int> numbers;
  for (const FieldDescriptor* extension : extensions) {
    if (Holds(extension->file())) numbers.push_back(extension->number());
  }
  std::sort(numbers.begin(), numbers.end());
  return numbers;
}

std::shared_ptr<google::protobuf::Service> MakeGrpcReflectionService(
    std::string_view service_full_name, std::shared_ptr<const ReflectionIndex> index) {
  auto service = std::make_shared<ReflectionService>(
      GrpcBuiltinProtos::Get().Service(service_full_name), std::move(index));
  return std::shared_ptr<google::protobuf::Service>(service, &service->streams);
}

}  // namespace arenarpc::server
