#pragma once
// glog/brpc-style logging macros over arenarpc's log sink (arenarpc/logging.h), for code ported
// from brpc (butil/logging.h) or written in that style. Opt-in: include this header where you
// want them; nothing else in arenarpc includes it.
//
//   LOG(INFO) << "Received request from " << cntl->remote_side();
//   LOG_IF(WARNING, latency_us > 1000) << "slow: " << latency_us << "us";
//   PLOG(ERROR) << "open " << path;          // appends ": <strerror(errno)>"
//   CHECK(ptr != nullptr) << "no service";   // logs and aborts when false
//   CHECK_EQ(a, b); CHECK_LT(i, n);          // print both values when false
//   DCHECK(...), DLOG(INFO): only without NDEBUG.  VLOG(n): at DEBUG level.
//
// Severities INFO, NOTICE (= INFO), WARNING, ERROR and FATAL (logged as ERROR, then abort()).
// A message reads "file.cc:42] text" and goes to the sink set with SetLogSink (stderr by
// default); it is formatted only when its level is enabled (SetMinLogLevel; WARNING by default,
// so LOG(INFO) is dropped unless you lower it).
//
// With glog (or butil/logging.h) included first, its macros stay: each macro here is defined
// only where no macro of that name exists yet.

#include <cerrno>
#include <memory>
#include <sstream>
#include <string>

#include "arenarpc/logging.h"

namespace arenarpc::log_internal {

// One message being formatted; sent (and, if fatal, the process aborted) when it is destroyed.
class LogMessage {
 public:
  LogMessage(const char* file, int line, LogLevel level, bool fatal, int error = -1);
  ~LogMessage();
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  std::ostream& stream() { return stream_; }

 private:
  const LogLevel level_;
  const bool fatal_;
  const int error_;  // >= 0: PLOG's errno, appended with its text
  std::ostringstream stream_;
};

// Turns `cond ? (void)0 : Voidify() & stream` into an expression of type void.
struct Voidify {
  void operator&(std::ostream&) {}
};

inline bool Enabled(LogLevel level, bool fatal) { return fatal || LogEnabled(level); }

// nullptr when `compare(a, b)` holds, else "Check failed: <text> (<a> vs. <b>) ".
template <class A, class B, class Compare>
std::unique_ptr<std::string> CheckOp(const A& a, const B& b, const char* text, Compare compare) {
  if (compare(a, b)) return nullptr;
  std::ostringstream out;
  out << "Check failed: " << text << " (" << a << " vs. " << b << ") ";
  return std::make_unique<std::string>(out.str());
}

}  // namespace arenarpc::log_internal

// Severity -> (level, fatal)
#define ARENARPC_SEVERITY_DEBUG ::arenarpc::LogLevel::kDebug, false
#define ARENARPC_SEVERITY_INFO ::arenarpc::LogLevel::kInfo, false
#define ARENARPC_SEVERITY_NOTICE ::arenarpc::LogLevel::kInfo, false
#define ARENARPC_SEVERITY_WARNING ::arenarpc::LogLevel::kWarning, false
#define ARENARPC_SEVERITY_ERROR ::arenarpc::LogLevel::kError, false
#define ARENARPC_SEVERITY_FATAL ::arenarpc::LogLevel::kError, true

#define ARENARPC_LOG_STREAM(severity, error)                                                      \
  ::arenarpc::log_internal::LogMessage(__FILE__, __LINE__, ARENARPC_SEVERITY_##severity, error)   \
      .stream()
#define ARENARPC_LAZY_STREAM(enabled, stream) \
  !(enabled) ? (void)0 : ::arenarpc::log_internal::Voidify() & (stream)
#define ARENARPC_ENABLED(severity) ::arenarpc::log_internal::Enabled(ARENARPC_SEVERITY_##severity)

#ifndef LOG
#define LOG(severity) ARENARPC_LAZY_STREAM(ARENARPC_ENABLED(severity), ARENARPC_LOG_STREAM(severity, -1))
#endif
#ifndef LOG_IF
#define LOG_IF(severity, condition) \
  ARENARPC_LAZY_STREAM(ARENARPC_ENABLED(severity) && (condition), ARENARPC_LOG_STREAM(severity, -1))
#endif
#ifndef PLOG
#define PLOG(severity) \
  ARENARPC_LAZY_STREAM(ARENARPC_ENABLED(severity), ARENARPC_LOG_STREAM(severity, errno))
#endif
#ifndef PLOG_IF
#define PLOG_IF(severity, condition)                               \
  ARENARPC_LAZY_STREAM(ARENARPC_ENABLED(severity) && (condition), \
                       ARENARPC_LOG_STREAM(severity, errno))
#endif
#ifndef VLOG
#define VLOG(verbose_level) LOG(DEBUG)
#endif
#ifndef CHECK
#define CHECK(condition) \
  LOG_IF(FATAL, !(condition)) << "Check failed: " #condition " "
#endif
#ifndef PCHECK
#define PCHECK(condition) \
  PLOG_IF(FATAL, !(condition)) << "Check failed: " #condition " "
#endif

#define ARENARPC_CHECK_OP(op, a, b)                                                              \
  while (std::unique_ptr<std::string> arenarpc_check_failure =                                   \
             ::arenarpc::log_internal::CheckOp((a), (b), #a " " #op " " #b,                      \
                                               [](const auto& x, const auto& y) {                \
                                                 return static_cast<bool>(x op y);               \
                                               }))                                               \
  ARENARPC_LOG_STREAM(FATAL, -1) << *arenarpc_check_failure

#ifndef CHECK_EQ
#define CHECK_EQ(a, b) ARENARPC_CHECK_OP(==, a, b)
#define CHECK_NE(a, b) ARENARPC_CHECK_OP(!=, a, b)
#define CHECK_LT(a, b) ARENARPC_CHECK_OP(<, a, b)
#define CHECK_LE(a, b) ARENARPC_CHECK_OP(<=, a, b)
#define CHECK_GT(a, b) ARENARPC_CHECK_OP(>, a, b)
#define CHECK_GE(a, b) ARENARPC_CHECK_OP(>=, a, b)
#endif

#ifndef DLOG
#ifdef NDEBUG
// Not evaluated, but still compiled: a DLOG/DCHECK that stops compiling is noticed in release.
#define DLOG(severity) while (false) LOG(severity)
#define DLOG_IF(severity, condition) while (false) LOG_IF(severity, condition)
#define DCHECK(condition) while (false) CHECK(condition)
#define DCHECK_EQ(a, b) while (false) CHECK_EQ(a, b)
#define DCHECK_NE(a, b) while (false) CHECK_NE(a, b)
#define DCHECK_LT(a, b) while (false) CHECK_LT(a, b)
#define DCHECK_LE(a, b) while (false) CHECK_LE(a, b)
#define DCHECK_GT(a, b) while (false) CHECK_GT(a, b)
#define DCHECK_GE(a, b) while (false) CHECK_GE(a, b)
#else
#define DLOG(severity) LOG(severity)
#define DLOG_IF(severity, condition) LOG_IF(severity, condition)
#define DCHECK(condition) CHECK(condition)
#define DCHECK_EQ(a, b) CHECK_EQ(a, b)
#define DCHECK_NE(a, b) CHECK_NE(a, b)
#define DCHECK_LT(a, b) CHECK_LT(a, b)
#define DCHECK_LE(a, b) CHECK_LE(a, b)
#define DCHECK_GT(a, b) CHECK_GT(a, b)
#define DCHECK_GE(a, b) CHECK_GE(a, b)
#endif
#endif
