// LogMessage of arenarpc/log_macros.h: formats "file.cc:42] text" and hands it to Log().
#include <cstdlib>
#include <cstring>

#include "arenarpc/log_macros.h"

namespace arenarpc::log_internal {

LogMessage::LogMessage(const char* file, int line, LogLevel level, bool fatal, int error)
    : level_(level), fatal_(fatal), error_(error) {
  const char* slash = std::strrchr(file, '/');
  stream_ << (slash != nullptr ? slash + 1 : file) << ':' << line << "] ";
}

LogMessage::~LogMessage() {
  if (error_ >= 0) {
    char buffer[256];
    // GNU strerror_r: returns the text (in `buffer` or a static string).
    stream_ << ": " << strerror_r(error_, buffer, sizeof buffer) << " [" << error_ << "]";
  }
  Log(level_, stream_.str());
  if (fatal_) std::abort();
}

}  // namespace arenarpc::log_internal
