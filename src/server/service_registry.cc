#include "server/service_registry.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/service.h>

#include "arenarpc/error_codes.h"
#include "protocol/meta_builder.h"

namespace arenarpc::server {

int ServiceRegistry::Add(google::protobuf::Service* service, ServiceOwnership ownership,
                         std::string* error) {
  if (service == nullptr) {
    *error = "AddService: service is null";
    return -1;
  }
  const google::protobuf::ServiceDescriptor* descriptor = service->GetDescriptor();
  const std::string& full_name = descriptor->full_name();
  const std::string& short_name = descriptor->name();
  if (by_full_name_.count(full_name) != 0) {
    *error = "AddService: service " + full_name + " is already added";
    return -1;
  }
  if (by_short_name_.count(short_name) != 0) {
    *error = "AddService: service " + full_name + " has the same short name '" + short_name +
             "' as " + by_short_name_.find(short_name)->second->full_name +
             " (short names must be unique per server, spec §5.2)";
    return -1;
  }
  if (descriptor->method_count() == 0) {
    *error = "AddService: service " + full_name + " has no methods";
    return -1;
  }
  std::shared_ptr<google::protobuf::Service> owner;
  if (ownership == SERVER_OWNS_SERVICE) {
    owner.reset(service);
  } else {
    owner = std::shared_ptr<google::protobuf::Service>(service, [](google::protobuf::Service*) {});
  }
  auto entry = std::make_unique<ServiceEntry>();
  entry->full_name = full_name;
  AddMethods(service, owner, /*builtin=*/false, &entry->methods);
  by_short_name_.emplace(short_name, entry.get());
  by_full_name_.emplace(full_name, std::move(entry));
  return 0;
}

void ServiceRegistry::AddMethods(google::protobuf::Service* service,
                                 const std::shared_ptr<google::protobuf::Service>& owner,
                                 bool builtin,
                                 std::map<std::string, MethodEntry*, std::less<>>* by_name) {
  const google::protobuf::ServiceDescriptor* descriptor = service->GetDescriptor();
  for (int i = 0; i < descriptor->method_count(); ++i) {
    const google::protobuf::MethodDescriptor* method = descriptor->method(i);
    auto method_entry = std::make_unique<MethodEntry>();
    method_entry->full_name = method->full_name();
    method_entry->descriptor = method;
    method_entry->service = service;
    method_entry->service_owner = owner;
    method_entry->builtin = builtin;
    by_name->emplace(method->name(), method_entry.get());
    by_method_name_.emplace(method_entry->full_name, method_entry.get());
    methods_.push_back(std::move(method_entry));
  }
}

void ServiceRegistry::AddBuiltin(std::shared_ptr<google::protobuf::Service> service) {
  auto entry = std::make_unique<ServiceEntry>();
  entry->full_name = service->GetDescriptor()->full_name();
  AddMethods(service.get(), service, /*builtin=*/true, &entry->methods);
  by_full_name_.emplace(entry->full_name, std::move(entry));
}

bool ServiceRegistry::Contains(std::string_view service_full_name) const {
  return by_full_name_.find(service_full_name) != by_full_name_.end();
}

std::vector<const google::protobuf::ServiceDescriptor*> ServiceRegistry::Services() const {
  std::vector<const google::protobuf::ServiceDescriptor*> services;
  for (const auto& method : methods_) {
    const google::protobuf::ServiceDescriptor* service = method->descriptor->service();
    if (services.empty() || services.back() != service) services.push_back(service);
  }
  return services;
}

MethodEntry* ServiceRegistry::Resolve(std::string_view service_name, std::string_view method_name,
                                      int* error_code, std::string* error_text) const {
  const ServiceEntry* service = nullptr;
  if (service_name.find('.') != std::string_view::npos) {
    if (auto it = by_full_name_.find(service_name); it != by_full_name_.end()) {
      service = it->second.get();
    }
  } else {
    auto it = by_short_name_.find(service_name);
    if (it == by_short_name_.end()) {
      *error_code = ENOSERVICE;
      *error_text = protocol::NoServiceText(service_name);
      return nullptr;
    }
    service = it->second;
  }
  if (service != nullptr) {
    if (auto it = service->methods.find(method_name); it != service->methods.end()) {
      return it->second;
    }
  }
  *error_code = ENOMETHOD;
  *error_text = protocol::NoMethodText(
      service != nullptr ? std::string_view(service->full_name) : service_name, method_name);
  return nullptr;
}

MethodEntry* ServiceRegistry::FindMethod(std::string_view full_method_name) const {
  auto it = by_method_name_.find(full_method_name);
  return it == by_method_name_.end() ? nullptr : it->second;
}

void ServiceRegistry::IndexGrpcStreamPaths() {
  grpc_stream_paths_.clear();
  for (const auto& entry : methods_) {
    if (!entry->grpc_stream) continue;
    const google::protobuf::ServiceDescriptor* service = entry->descriptor->service();
    grpc_stream_paths_.push_back("/" + service->full_name() + "/" + entry->descriptor->name());
    // The short service name too, where Resolve() takes it for this method.
    int code = 0;
    std::string text;
    if (service->name() != service->full_name() &&
        Resolve(service->name(), entry->descriptor->name(), &code, &text) == entry.get()) {
      grpc_stream_paths_.push_back("/" + service->name() + "/" + entry->descriptor->name());
    }
  }
}

bool ServiceRegistry::IsGrpcStreamPath(std::string_view path) const {
  for (const std::string& stream_path : grpc_stream_paths_) {
    if (stream_path == path) return true;
  }
  return false;
}

}  // namespace arenarpc::server
