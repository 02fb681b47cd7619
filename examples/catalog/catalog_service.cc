#include "catalog/catalog_service.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <map>
#include <sstream>
#include <string_view>

#include "arenarpc/closure_guard.h"

namespace arenarpc::example::catalog {
namespace {

constexpr std::array<std::string_view, 8> kCategories = {"shoes",   "jackets", "bags", "watches",
                                                         "lamps",   "chairs",  "books", "toys"};
constexpr std::array<std::string_view, 10> kAdjectives = {
    "classic", "light", "urban", "vintage", "compact", "soft", "rugged", "slim", "bright", "quiet"};
constexpr std::array<std::string_view, 10> kNouns = {
    "runner", "parka", "tote", "chronograph", "reader", "lounger", "novel", "robot", "trail", "desk"};
constexpr std::array<std::string_view, 8> kColors = {"black", "white", "red",   "blue",
                                                     "green", "grey",  "brown", "yellow"};
constexpr std::array<std::string_view, 6> kBrands = {"acme", "borealis", "cobalt",
                                                     "dune", "ember",    "fjord"};
constexpr std::array<std::string_view, 5> kMaterials = {"cotton", "leather", "steel", "wood",
                                                        "wool"};
constexpr std::array<std::string_view, 4> kSizes = {"S", "M", "L", "XL"};

// A fixed-seed generator (the same catalog in every process, whatever the standard library).
class Lcg {
 public:
  uint32_t Next() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(state_ >> 33);
  }
  template <typename Array>
  std::string_view Pick(const Array& values) {
    return values[Next() % values.size()];
  }

 private:
  uint64_t state_ = 20260301;
};

Money Price(int64_t cents) {
  Money money;
  money.set_currency("EUR");
  money.set_units(cents / 100);
  money.set_nanos(static_cast<int32_t>(cents % 100) * 10'000'000);
  return money;
}

int64_t Cents(const Money& money) { return money.units() * 100 + money.nanos() / 10'000'000; }

void AddAttribute(Product& product, std::string_view name, std::string_view value) {
  Attribute* attribute = product.add_attributes();
  attribute->set_name(std::string(name));
  attribute->set_value(std::string(value));
}

Product MakeProduct(size_t index, Lcg& random) {
  Product product;
  char sku[24];
  std::snprintf(sku, sizeof sku, "SKU-%05zu", index);
  product.set_sku(sku);
  const std::string_view adjective = random.Pick(kAdjectives);
  const std::string_view noun = random.Pick(kNouns);
  const std::string_view color = random.Pick(kColors);
  const std::string_view brand = random.Pick(kBrands);
  product.set_title(std::string(brand) + " " + std::string(adjective) + " " + std::string(noun));
  if (random.Next() % 3 == 0) product.set_subtitle("in " + std::string(color));
  product.set_category(std::string(random.Pick(kCategories)));
  *product.mutable_price() = Price(500 + random.Next() % 50'000);
  for (uint32_t i = 0, n = 2 + random.Next() % 5; i < n; ++i) {
    product.add_tags(std::string(i == 0 ? adjective : random.Pick(kAdjectives)));
  }
  product.add_tags(std::string(noun));
  // By name, as the .proto promises.
  AddAttribute(product, "brand", brand);
  AddAttribute(product, "color", color);
  AddAttribute(product, "material", random.Pick(kMaterials));
  switch (random.Next() % 10) {
    case 0: product.set_discontinued(true); break;
    case 1: product.set_backorder_until("2026-0" + std::to_string(1 + random.Next() % 9) + "-15"); break;
    default: product.set_in_stock(static_cast<int32_t>(random.Next() % 200)); break;
  }
  for (uint32_t i = 0, n = random.Next() % 5; i < n; ++i) {
    Variant* variant = product.add_variants();
    variant->set_sku(product.sku() + "-" + std::to_string(i));
    Attribute* size = variant->add_options();
    size->set_name("size");
    size->set_value(std::string(kSizes[i % kSizes.size()]));
    Attribute* shade = variant->add_options();
    shade->set_name("color");
    shade->set_value(std::string(random.Pick(kColors)));
    if (i % 2 == 1) *variant->mutable_price_delta() = Price(100 * i);
  }
  product.set_rating(1.0 + (random.Next() % 41) / 10.0);
  return product;
}

std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string word; in >> word;) {
    std::transform(word.begin(), word.end(), word.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    words.push_back(std::move(word));
  }
  return words;
}

std::string_view AttributeValue(const Product& product, std::string_view name) {
  for (const Attribute& attribute : product.attributes()) {
    if (attribute.name() == name) return attribute.value();
  }
  return {};
}

// How many of the query's words the product's title words and tags hold.
int Relevance(const Product& product, const std::vector<std::string>& title,
              const std::vector<std::string>& query) {
  int score = 0;
  for (const std::string& word : query) {
    const bool in_title = std::find(title.begin(), title.end(), word) != title.end();
    const bool in_tags =
        std::find(product.tags().begin(), product.tags().end(), word) != product.tags().end();
    score += (in_title ? 2 : 0) + (in_tags ? 1 : 0);
  }
  return score;
}

bool Matches(const Product& product, const SearchRequest& request) {
  if (!request.categories().empty() &&
      std::find(request.categories().begin(), request.categories().end(), product.category()) ==
          request.categories().end()) {
    return false;
  }
  if (request.has_price()) {
    const int64_t cents = Cents(product.price());
    if (request.price().has_min() && cents < Cents(request.price().min())) return false;
    if (request.price().has_max() && cents > Cents(request.price().max())) return false;
  }
  for (const auto& [name, value] : request.filters()) {
    if (AttributeValue(product, name) != value) return false;
  }
  return true;
}

void AddFacet(SearchResponse* response, std::string_view name,
              const std::map<std::string, int>& counts) {
  Facet* facet = response->add_facets();
  facet->set_name(std::string(name));
  for (const auto& [value, count] : counts) {  // std::map: by value
    FacetValue* entry = facet->add_values();
    entry->set_value(value);
    entry->set_count(count);
  }
}

void CopyProduct(const Product& product, bool with_variants, Product* out) {
  out->CopyFrom(product);
  if (!with_variants) out->clear_variants();
}

}  // namespace

Catalog::Catalog(size_t products) {
  Lcg random;
  products_.reserve(products);
  for (size_t i = 0; i < products; ++i) {
    products_.push_back(MakeProduct(i, random));
    by_sku_.emplace(products_.back().sku(), i);
    title_words_.push_back(Words(products_.back().title()));
  }
}

std::string Catalog::Search(const SearchRequest& request, SearchResponse* response) const {
  size_t offset = 0;
  if (request.has_page_token()) {
    const std::string& token = request.page_token();
    if (token.empty() || token.size() > 9 ||
        token.find_first_not_of("0123456789") != std::string::npos) {
      return "page_token '" + token + "' is not one this server gave";
    }
    offset = std::stoul(token);
  }
  const std::vector<std::string> query = Words(request.query());
  struct Match {
    const Product* product;
    int relevance;
  };
  std::vector<Match> matches;
  for (size_t i = 0; i < products_.size(); ++i) {
    const Product& product = products_[i];
    if (!Matches(product, request)) continue;
    const int relevance = query.empty() ? 0 : Relevance(product, title_words_[i], query);
    if (!query.empty() && relevance == 0) continue;
    matches.push_back({&product, relevance});
  }
  const std::string field = request.order_case() == SearchRequest::kByField ? request.by_field()
                                                                            : "relevance";
  // stable_sort over catalog order, so ties keep SKU order: the same request, the same page.
  std::stable_sort(matches.begin(), matches.end(), [&](const Match& a, const Match& b) {
    if (field == "price") return Cents(a.product->price()) < Cents(b.product->price());
    if (field == "rating") return a.product->rating() > b.product->rating();
    if (field == "title") return a.product->title() < b.product->title();
    return a.relevance > b.relevance;
  });
  std::map<std::string, int> categories, colors, brands;
  for (const Match& match : matches) {
    ++categories[match.product->category()];
    ++colors[std::string(AttributeValue(*match.product, "color"))];
    ++brands[std::string(AttributeValue(*match.product, "brand"))];
  }
  AddFacet(response, "brand", brands);
  AddFacet(response, "category", categories);
  AddFacet(response, "color", colors);
  response->set_total_matches(static_cast<int32_t>(matches.size()));
  const size_t page_size =
      request.page_size() <= 0 ? 10 : std::min<size_t>(static_cast<size_t>(request.page_size()), 100);
  const size_t end = std::min(matches.size(), offset + page_size);
  for (size_t i = offset; i < end; ++i) {
    CopyProduct(*matches[i].product, request.with_variants(), response->add_products());
  }
  if (end < matches.size()) response->set_next_page_token(std::to_string(end));
  return "";
}

void Catalog::Lookup(const LookupRequest& request, LookupResponse* response) const {
  for (const std::string& sku : request.skus()) {
    auto it = by_sku_.find(sku);
    if (it == by_sku_.end()) {
      response->add_missing(sku);
      continue;
    }
    CopyProduct(products_[it->second], request.with_variants(), response->add_products());
  }
}

void CatalogServiceImpl::Search(google::protobuf::RpcController* controller,
                                const SearchRequest* request, SearchResponse* response,
                                google::protobuf::Closure* done) {
  arenarpc::ClosureGuard done_guard(done);
  if (std::string error = catalog_.Search(*request, response); !error.empty()) {
    controller->SetFailed(error);
  }
}

void CatalogServiceImpl::Lookup(google::protobuf::RpcController*, const LookupRequest* request,
                                LookupResponse* response, google::protobuf::Closure* done) {
  arenarpc::ClosureGuard done_guard(done);
  catalog_.Lookup(*request, response);
}

}  // namespace arenarpc::example::catalog
