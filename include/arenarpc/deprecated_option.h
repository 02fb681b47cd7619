#pragma once
// Renamed options keep their old spelling for one release (docs/api-conventions.md, "Renamed
// options"). The old field is [[deprecated("use <new name>")]] and defaults to kUnsetOption<T>;
// set to anything else, it wins over the field that replaced it. The library reads it in one
// place per options struct, when the struct is handed to it (Server::Start, Channel::Init, ...).

#include <limits>

namespace arenarpc {

// "Not set" for a deprecated option of type T: a value no option takes (INT_MIN for a signed
// field; 0 for an unsigned one whose valid values start at 1).
template <class T>
inline constexpr T kUnsetOption = std::numeric_limits<T>::min();

}  // namespace arenarpc

// Around the definition of an options struct with deprecated fields: GCC otherwise warns every
// translation unit that merely creates or copies the struct (its implicit constructors touch the
// fields). Code that names a deprecated field still gets the warning.
#define ARENARPC_DEPRECATED_FIELDS_BEGIN \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wdeprecated-declarations\"")
#define ARENARPC_DEPRECATED_FIELDS_END _Pragma("GCC diagnostic pop")
