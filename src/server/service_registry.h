#pragma once
// ServiceRegistry: registered services and methods, resolved as brpc does (spec §5.2): a
// service_name with '.' is fully qualified, one without is a short name.

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "arenarpc/server.h"
#include "server/method_entry.h"

namespace arenarpc::server {

class ServiceRegistry {
 public:
  ServiceRegistry() = default;
  ServiceRegistry(const ServiceRegistry&) = delete;
  ServiceRegistry& operator=(const ServiceRegistry&) = delete;

  // 0, or -1 with *error set (null service, duplicate full or short name, no methods).
  int Add(google::protobuf::Service* service, ServiceOwnership ownership, std::string* error);

  // Resolution of one request (spec §5.2). On a miss returns nullptr and sets the wire error code
  // (ENOSERVICE / ENOMETHOD) and the message (without the server identity prefix).
  MethodEntry* Resolve(std::string_view service_name, std::string_view method_name,
                       int* error_code, std::string* error_text) const;
  MethodEntry* FindMethod(std::string_view full_method_name) const;
  // A built-in gRPC service (server/grpc_builtin_services.h): by full name only, its methods
  // marked MethodEntry::builtin. Its name must not be registered yet (Contains()).
  void AddBuiltin(std::shared_ptr<google::protobuf::Service> service);
  bool Contains(std::string_view service_full_name) const;
  // Every registered service, in registration order.
  std::vector<const google::protobuf::ServiceDescriptor*> Services() const;
  const std::vector<std::unique_ptr<MethodEntry>>& methods() const { return methods_; }
  // gRPC paths ("/pkg.Service/Method") of the methods marked grpc_stream, listed once their marks
  // are set (Server::Start); IsGrpcStreamPath() answers the gRPC session for every request.
  void IndexGrpcStreamPaths();
  bool IsGrpcStreamPath(std::string_view path) const;

 private:
  void AddMethods(google::protobuf::Service* service,
                  const std::shared_ptr<google::protobuf::Service>& owner, bool builtin,
                  std::map<std::string, MethodEntry*, std::less<>>* by_name);
  struct ServiceEntry {
    std::string full_name;
    std::map<std::string, MethodEntry*, std::less<>> methods;  // by method name
  };
  std::vector<std::unique_ptr<MethodEntry>> methods_;
  std::vector<std::string> grpc_stream_paths_;  // a handful: a scan beats hashing the path
  std::map<std::string, std::unique_ptr<ServiceEntry>, std::less<>> by_full_name_;
  std::map<std::string, ServiceEntry*, std::less<>> by_short_name_;
  std::map<std::string, MethodEntry*, std::less<>> by_method_name_;  // "pkg.Service.Method"
};

// The method one reader (a connection's reading thread) resolved last, and the names that named
// it: a connection's calls mostly name one method, and two compares cost less than the registry's
// maps, which do not change while the server runs.
class LastResolved {
 public:
  // ServiceRegistry::Resolve(), from the remembered entry when the names are the last ones.
  MethodEntry* Resolve(const ServiceRegistry& registry, std::string_view service_name,
                       std::string_view method_name, int* error_code, std::string* error_text) {
    if (entry_ != nullptr && service_name == service_name_ && method_name == method_name_) {
      return entry_;
    }
    MethodEntry* entry = registry.Resolve(service_name, method_name, error_code, error_text);
    if (entry != nullptr) {
      entry_ = entry;
      service_name_.assign(service_name);
      method_name_.assign(method_name);
    }
    return entry;
  }

 private:
  MethodEntry* entry_ = nullptr;
  std::string service_name_, method_name_;
};

}  // namespace arenarpc::server
