#pragma once
// Reading a deprecated option spelling (arenarpc/deprecated_option.h) in the one place its struct
// enters the library: a set old field replaces the duration that renamed it and is reset, so
// that the rest of the library reads the new field only.

#include <chrono>

#include "arenarpc/deprecated_option.h"

namespace arenarpc::util {

// `OldUnit` is the old field's unit (std::chrono::milliseconds for a *_ms field).
template <class OldUnit, class T, class Rep, class Period>
void TakeDeprecated(T* old_field, std::chrono::duration<Rep, Period>* field) {
  if (*old_field == kUnsetOption<T>) return;
  *field = std::chrono::duration_cast<std::chrono::duration<Rep, Period>>(OldUnit(*old_field));
  *old_field = kUnsetOption<T>;
}

}  // namespace arenarpc::util
