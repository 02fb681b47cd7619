#include "server/settings_face.h"

#include "server/server_state.h"

namespace arenarpc::server {
namespace {

class StateSettings final : public stats::ServerSettings {
 public:
  explicit StateSettings(std::weak_ptr<ServerState> state) : state_(std::move(state)) {}
  bool available() const override { return !state_.expired(); }
  std::vector<ServerSetting> List() const override {
    const auto state = state_.lock();
    return state ? state->live.List(state->config) : std::vector<ServerSetting>{};
  }
  std::vector<SettingChange> Changes() const override {
    const auto state = state_.lock();
    return state ? state->live.Changes() : std::vector<SettingChange>{};
  }
  stats::SetVerdict Set(std::string_view name, std::string_view value,
                        const stats::SettingOrigin& who, std::string* error) override {
    const auto state = state_.lock();
    if (!state) {
      *error = "the server is gone";
      return stats::SetVerdict::kGone;
    }
    return state->live.Set(state->config, state->admission, name, value, who, error);
  }

 private:
  std::weak_ptr<ServerState> state_;
};

}  // namespace

std::shared_ptr<stats::ServerSettings> MakeServerSettings(std::weak_ptr<ServerState> state) {
  return std::make_shared<StateSettings>(std::move(state));
}

}  // namespace arenarpc::server
