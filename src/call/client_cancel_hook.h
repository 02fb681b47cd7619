#pragma once
// How Controller::StartCancel() reaches the client's calls without call/ depending on client/:
// the client's call registry installs its cancel function when it is first used. Before any client
// call was made there is nothing to cancel, and StartCancel() does nothing.

#include <cstdint>

namespace arenarpc::call {

using ClientCancelFunction = void (*)(uint64_t call_id);

void InstallClientCancel(ClientCancelFunction cancel) noexcept;
// Cancels the client call `call_id` if the client is in use (see above).
void CancelClientCall(uint64_t call_id) noexcept;

}  // namespace arenarpc::call
