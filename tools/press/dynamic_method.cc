#include "press/dynamic_method.h"

#include <filesystem>

namespace arenarpc::press {
namespace {

namespace pb = google::protobuf;

// Collects the parser's and the importer's errors as "file:line:column: message" lines.
class CollectingErrors final : public pb::compiler::MultiFileErrorCollector {
 public:
  void AddError(const std::string& filename, int line, int column,
                const std::string& message) override {
    // The importer's line and column are 0-based; -1 when the error has no position.
    text += "\n  " + filename;
    if (line >= 0) text += ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1);
    text += ": " + message;
  }
  std::string text;
};

std::string Names(int count, auto name_of) {
  std::string names;
  for (int i = 0; i < count; ++i) names += (i ? ", " : "") + name_of(i);
  return names.empty() ? "none" : names;
}

}  // namespace

std::vector<std::string> SplitProtoPath(std::string_view proto_path) {
  std::vector<std::string> dirs;
  while (!proto_path.empty()) {
    const size_t colon = proto_path.find(':');
    const std::string_view dir = proto_path.substr(0, colon);
    if (!dir.empty()) dirs.emplace_back(dir);
    if (colon == std::string_view::npos) break;
    proto_path.remove_prefix(colon + 1);
  }
  return dirs;
}

std::unique_ptr<DynamicMethod> DynamicMethod::LoadFile(const std::string& proto_file,
                                                       const std::string& proto_path,
                                                       std::string* error) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (proto_file.empty()) {
    *error = "--proto: no .proto file given";
    return nullptr;
  }
  if (!fs::is_regular_file(proto_file, ec)) {
    *error = "--proto: cannot read '" + proto_file + "' (no such file)";
    return nullptr;
  }
  std::unique_ptr<DynamicMethod> loaded(new DynamicMethod());
  for (const std::string& dir : SplitProtoPath(proto_path)) {
    if (!fs::is_directory(dir, ec)) {
      *error = "--proto_path: '" + dir + "' is not a directory";
      return nullptr;
    }
    loaded->source_tree_.MapPath("", dir);
  }
  const fs::path proto_dir = fs::path(proto_file).parent_path();
  loaded->source_tree_.MapPath("", proto_dir.empty() ? "." : proto_dir.string());

  std::string virtual_name, shadowing;
  using Mapping = pb::compiler::DiskSourceTree;
  switch (loaded->source_tree_.DiskFileToVirtualFile(proto_file, &virtual_name, &shadowing)) {
    case Mapping::SUCCESS: break;
    case Mapping::SHADOWED:
      *error = "--proto: '" + proto_file + "' is shadowed by '" + shadowing +
               "' (an earlier --proto_path directory holds a file of the same name)";
      return nullptr;
    default:
      virtual_name = fs::path(proto_file).filename().string();
  }

  auto collector = std::make_unique<CollectingErrors>();
  CollectingErrors& errors = *collector;
  loaded->errors_ = std::move(collector);
  loaded->importer_ =
      std::make_unique<pb::compiler::Importer>(&loaded->source_tree_, loaded->errors_.get());
  loaded->file_ = loaded->importer_->Import(virtual_name);
  if (loaded->file_ == nullptr) {
    *error = "--proto: cannot load '" + proto_file + "':" +
             (errors.text.empty() ? std::string(" unknown error") : errors.text);
    return nullptr;
  }
  return loaded;
}

std::unique_ptr<DynamicMethod> DynamicMethod::Load(const std::string& proto_file,
                                                   const std::string& proto_path,
                                                   const std::string& method,
                                                   std::string* error) {
  std::unique_ptr<DynamicMethod> loaded = LoadFile(proto_file, proto_path, error);
  if (!loaded) return nullptr;
  const pb::FileDescriptor* file = loaded->file_;
  // "pkg.Service.Method" or "pkg.Service/Method".
  const size_t split = method.find_last_of("./");
  if (split == std::string::npos || split == 0 || split + 1 == method.size()) {
    *error = "--method: '" + method + "' is not pkg.Service.Method";
    return nullptr;
  }
  const std::string service_name = method.substr(0, split);
  const std::string method_name = method.substr(split + 1);
  const pb::ServiceDescriptor* service =
      loaded->importer_->pool()->FindServiceByName(service_name);
  if (service == nullptr) {
    *error = "--method: no service '" + service_name + "' in " + proto_file + " (services: " +
             Names(file->service_count(),
                   [&](int i) { return file->service(i)->full_name(); }) + ")";
    return nullptr;
  }
  loaded->method_ = service->FindMethodByName(method_name);
  if (loaded->method_ == nullptr) {
    *error = "--method: service '" + service_name + "' has no method '" + method_name +
             "' (methods: " +
             Names(service->method_count(), [&](int i) { return service->method(i)->name(); }) +
             ")";
    return nullptr;
  }
  if (loaded->method_->client_streaming() || loaded->method_->server_streaming()) {
    *error = "--method: '" + method + "' is a streaming method; only unary methods are supported";
    return nullptr;
  }
  return loaded;
}

std::unique_ptr<google::protobuf::Message> DynamicMethod::NewMessage(
    const google::protobuf::Descriptor& type) const {
  return std::unique_ptr<google::protobuf::Message>(factory_.GetPrototype(&type)->New());
}

const google::protobuf::Message& DynamicMethod::input_prototype() const {
  return *factory_.GetPrototype(method_->input_type());
}

const google::protobuf::Message& DynamicMethod::output_prototype() const {
  return *factory_.GetPrototype(method_->output_type());
}

}  // namespace arenarpc::press
