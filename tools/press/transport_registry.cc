#include <algorithm>
#include <map>
#include <mutex>

#include "echo/echo.pb.h"
#include "press/transport.h"

namespace arenarpc::press {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, TransportFactory, std::less<>> factories;
};

Registry& GetRegistry() {
  static Registry registry;  // constructed on first use: safe from other static initializers
  return registry;
}

}  // namespace

const google::protobuf::MethodDescriptor* EchoMethod(const TransportOptions& options) {
  return options.echo_method != nullptr
             ? options.echo_method
             : example::EchoService::descriptor()->FindMethodByName("Echo");
}

bool RegisterTransport(std::string name, TransportFactory factory) {
  Registry& r = GetRegistry();
  std::lock_guard lock(r.mu);
  return r.factories.emplace(std::move(name), std::move(factory)).second;
}

std::unique_ptr<Transport> MakeTransport(std::string_view name) {
  Registry& r = GetRegistry();
  std::lock_guard lock(r.mu);
  auto it = r.factories.find(name);
  return it == r.factories.end() ? nullptr : it->second();
}

std::vector<std::string> TransportNames() {
  Registry& r = GetRegistry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [name, factory] : r.factories) names.push_back(name);
  return names;
}

}  // namespace arenarpc::press
