#pragma once
// NamedEnum<E>: an option from a closed set that can be assigned its enum or its name, as brpc's
// AdaptiveConnectionType / AdaptiveProtocolType can — so brpc code and string flags keep working
// (`options.connection_type = "pooled";`) while the library works with the enum. An unknown name
// is kept (valid() is false) so that Channel::Init() can name it in its error.
//
// An enum opts in with a specialisation of EnumNames<E> listing {name, value} pairs; the first
// pair of each value is its canonical name.

#include <string>
#include <string_view>
#include <utility>

namespace arenarpc {

template <class E>
struct EnumNames;  // static constexpr std::pair<std::string_view, E> kNames[] = {...};

template <class E>
class NamedEnum {
 public:
  NamedEnum() = default;  // no value yet (valid() is false): a map's slot before assignment
  NamedEnum(E value) noexcept : value_(value), valid_(true) {}  // NOLINT: implicit, as brpc's
  NamedEnum(std::string_view name) {                             // NOLINT
    for (const auto& [known, value] : EnumNames<E>::kNames) {
      if (known == name) {
        value_ = value;
        valid_ = true;
        return;
      }
    }
    unknown_ = std::string(name);
  }
  NamedEnum(const char* name) : NamedEnum(std::string_view(name)) {}         // NOLINT
  NamedEnum(const std::string& name) : NamedEnum(std::string_view(name)) {}  // NOLINT

  bool valid() const noexcept { return valid_; }
  E value() const noexcept { return value_; }  // meaningful when valid()
  // The canonical name of the value, or the unknown name as it was given.
  std::string_view name() const noexcept {
    if (!valid_) return unknown_;
    for (const auto& [known, value] : EnumNames<E>::kNames) {
      if (value == value_) return known;
    }
    return {};
  }

  friend bool operator==(const NamedEnum& a, E b) noexcept { return a.valid_ && a.value_ == b; }

  // Every value's canonical name, joined with ", " (for the error that names an unknown one).
  static std::string Choices() {
    std::string out;
    for (const auto& [known, value] : EnumNames<E>::kNames) {
      if (NamedEnum(value).name() != known) continue;  // an alias of an earlier name
      out.append(out.empty() ? "" : ", ").append(known);
    }
    return out;
  }

 private:
  E value_{};
  bool valid_ = false;
  std::string unknown_;
};

}  // namespace arenarpc
