#include "builtin/builtin_registry.h"

namespace arenarpc::builtin {

bool BuiltinRegistry::Add(std::string path, std::string description, BuiltinHandler handler) {
  return pages_.try_emplace(std::move(path), Page{std::move(description), std::move(handler)})
      .second;
}

const BuiltinHandler* BuiltinRegistry::Find(std::string_view path) const {
  if (auto it = pages_.find(path); it != pages_.end()) return &it->second.handler;
  // The longest registered "/prefix/" that `path` starts with.
  for (size_t slash = path.rfind('/'); slash != std::string_view::npos && slash > 0;
       slash = path.rfind('/', slash - 1)) {
    auto it = pages_.find(path.substr(0, slash + 1));
    if (it != pages_.end()) return &it->second.handler;
  }
  return nullptr;
}

std::vector<BuiltinRegistry::Entry> BuiltinRegistry::List() const {
  std::vector<Entry> entries;
  for (const auto& [path, page] : pages_) entries.push_back({path, page.description});
  return entries;
}

}  // namespace arenarpc::builtin
