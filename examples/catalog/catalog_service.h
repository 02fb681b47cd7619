#pragma once
// The catalog example's handlers (docs/memlab.md): an in-memory catalog of products made from a
// fixed seed (every server process holds the same one), searched by query words, categories,
// price bounds and attribute filters, sorted and paged, with facet counts over the matches.
// Deterministic: the same request always gets the same response.

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "catalog/catalog.pb.h"

namespace arenarpc::example::catalog {

class Catalog {
 public:
  // `products` products, SKU-00000 onwards.
  explicit Catalog(size_t products);

  // "" on success, else why the request cannot be served (a page_token this catalog never gave).
  std::string Search(const SearchRequest& request, SearchResponse* response) const;
  void Lookup(const LookupRequest& request, LookupResponse* response) const;

  size_t size() const { return products_.size(); }

 private:
  std::vector<Product> products_;
  std::unordered_map<std::string, size_t> by_sku_;
  std::vector<std::vector<std::string>> title_words_;  // per product, lower case: for Relevance
};

class CatalogServiceImpl final : public CatalogService {
 public:
  explicit CatalogServiceImpl(const Catalog& catalog) : catalog_(catalog) {}
  void Search(google::protobuf::RpcController* controller, const SearchRequest* request,
              SearchResponse* response, google::protobuf::Closure* done) override;
  void Lookup(google::protobuf::RpcController* controller, const LookupRequest* request,
              LookupResponse* response, google::protobuf::Closure* done) override;

 private:
  const Catalog& catalog_;
};

}  // namespace arenarpc::example::catalog
