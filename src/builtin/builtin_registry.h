#pragma once
// BuiltinRegistry: the built-in services of one server, by path. Filled before the server starts
// serving, read-only afterwards (lookups need no lock).

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "builtin/builtin_service.h"

namespace arenarpc::builtin {

class BuiltinRegistry {
 public:
  // `path` is exact ("/status"); a path registered as "/prefix/" also serves everything under it.
  // Returns false (and registers nothing) when the path is taken.
  bool Add(std::string path, std::string description, BuiltinHandler handler);
  // The handler for a request path, or nullptr.
  const BuiltinHandler* Find(std::string_view path) const;

  struct Entry {
    std::string path, description;
  };
  std::vector<Entry> List() const;  // sorted by path (for the index page)

 private:
  struct Page {
    std::string description;
    BuiltinHandler handler;
  };
  std::map<std::string, Page, std::less<>> pages_;
};

}  // namespace arenarpc::builtin
