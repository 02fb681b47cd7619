#include "protocol/h2/nghttp2_core.h"

#include <utility>

namespace arenarpc::protocol::h2 {

Nghttp2Core::Nghttp2Core(Side side, const SessionCallbacks& callbacks,
                         std::initializer_list<nghttp2_settings_entry> settings,
                         size_t receive_budget, void* user_data)
    : session_(NewSession(side == Side::kServer, callbacks, user_data)) {
  Check(nghttp2_submit_settings(session_.get(), NGHTTP2_FLAG_NONE, settings.begin(),
                                settings.size()),
        "SETTINGS");
  Check(OpenConnectionWindow(session_.get(), receive_budget), "WINDOW_UPDATE");
}

bool Nghttp2Core::Check(int rv, std::string_view what) {
  if (rv >= 0) return true;
  if (!failed_) {
    failed_ = true;
    error_ = TerminateAfterError(session_.get(), rv, what);
  }
  return false;
}

void Nghttp2Core::Terminate(std::string why, uint32_t h2_error) {
  failed_ = true;
  error_ = std::move(why);
  nghttp2_session_terminate_session(session_.get(), h2_error);
}

}  // namespace arenarpc::protocol::h2
