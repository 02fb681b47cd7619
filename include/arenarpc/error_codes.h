#pragma once
// Error codes of the baidu_std protocol (brpc errno.proto), as they travel on the wire.
// Handlers may also fail calls with any other non-zero integer (e.g. Linux errno values).
// Client-side cancellation (StartCancel) uses the system's ECANCELED from <cerrno>, as brpc does;
// a cluster channel with no server in rotation fails calls with the system's EHOSTDOWN, as brpc.

namespace arenarpc {

enum ErrorCode : int {
  ENOSERVICE = 1001,
  ENOMETHOD = 1002,
  EREQUEST = 1003,
  ERPCAUTH = 1004,
  ETOOMANYFAILS = 1005,  // a ParallelChannel call: fail_limit sub-calls failed
  ERPCTIMEDOUT = 1008,
  EFAILEDSOCKET = 1009,
  EOVERCROWDED = 1011,
  EEOF = 1014,
  EREJECT = 1018,
  EINTERNAL = 2001,
  ERESPONSE = 2002,
  ELOGOFF = 2003,
  ELIMIT = 2004,
  ECLOSE = 2005,
};

// Short description of a code (brpc's wording where it has one), for logs and error texts.
const char* ErrorCodeName(int code) noexcept;

}  // namespace arenarpc
