// The headers most test files include, parsed once per build flavour into a precompiled header
// that every arenarpc_add_test() target reuses (cmake/ArenarpcTesting.cmake): a test file then
// compiles only its own code. Only headers that every test may see belong here (the standard
// library, GoogleTest, protobuf, arenarpc's public API); a test still includes what it uses.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <google/protobuf/arena.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <gtest/gtest.h>

#include "arenarpc/channel.h"
#include "arenarpc/controller.h"
#include "arenarpc/error_codes.h"
#include "arenarpc/memory/message_memory.h"
#include "arenarpc/server.h"
