#pragma once
// The hash c_murmurhash expects in Controller::set_request_code(): MurmurHash3 (x86, 32-bit) of
// the key the calls should stick to, e.g. cntl.set_request_code(arenarpc::MurmurHash32(user_id)).

#include <cstdint>
#include <string_view>

namespace arenarpc {

uint32_t MurmurHash32(std::string_view data, uint32_t seed = 0) noexcept;

}  // namespace arenarpc
