#include "arenarpc/error_codes.h"

namespace arenarpc {

const char* ErrorCodeName(int code) noexcept {
  switch (code) {
    case ENOSERVICE: return "ENOSERVICE";
    case ENOMETHOD: return "ENOMETHOD";
    case EREQUEST: return "EREQUEST";
    case ERPCAUTH: return "ERPCAUTH";
    case ETOOMANYFAILS: return "ETOOMANYFAILS";
    case ERPCTIMEDOUT: return "ERPCTIMEDOUT";
    case EFAILEDSOCKET: return "EFAILEDSOCKET";
    case EOVERCROWDED: return "EOVERCROWDED";
    case EEOF: return "EEOF";
    case EREJECT: return "EREJECT";
    case EINTERNAL: return "EINTERNAL";
    case ERESPONSE: return "ERESPONSE";
    case ELOGOFF: return "ELOGOFF";
    case ELIMIT: return "ELIMIT";
    case ECLOSE: return "ECLOSE";
    default: return "";
  }
}

}  // namespace arenarpc
