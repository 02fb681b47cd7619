find_package(GTest REQUIRED)
include(GoogleTest)
# arenarpc_add_test(<name> SOURCES ... [LIBS ...] [LABELS ...] [SERIAL] [SERIAL_TESTS <filter>])
# Label "concurrency" marks tests that the ThreadSanitizer build runs (scripts/test.sh tsan).
# SERIAL: ctest runs each of its tests alone (what it measures, e.g. a process's RSS or a p99,
# moves with whatever runs beside it). SERIAL_TESTS: only the tests matching this gtest filter
# (patterns joined by ':') run alone, the rest as any other.
# Every test target reuses one precompiled header (tests/precompiled.h) built by an executable
# of its own, compiled as the tests are (same options, -fPIE): a compiler uses a precompiled header
# only when the options it was made with match.
option(ARENARPC_TEST_PCH "Compile the tests with a precompiled header" ON)
function(arenarpc_test_compile_options target)
  target_link_libraries(${target} PRIVATE arenarpc_internal GTest::gtest GTest::gmock
                        GTest::gtest_main Threads::Threads)
  # gRPC's targets compile their users with -pthread: every test does, so that one precompiled
  # header fits them all.
  target_compile_options(${target} PRIVATE -pthread)
  if(ARENARPC_SANITIZE MATCHES "undefined")
    # The tests' own code skips UBSan's null and alignment checks, which cost a third of a test
    # file's compile time (an instrumented branch at every pointer use): the library under test
    # keeps every check, and a null dereference in a test still stops it under ASan.
    target_compile_options(${target} PRIVATE -fno-sanitize=null,alignment)
  endif()
  # A test file's compile is mostly code generation, so the tests' own files are optimized less
  # than the library they test (which keeps the build's flags): -O1 in an optimized build (a fifth
  # less compile time than -O2), -O0 in the sanitizer builds (under half -O1's time with clang),
  # where the library's instrumented code sets the tests' pace.
  if(ARENARPC_SANITIZE)
    target_compile_options(${target} PRIVATE -O0)
  elseif(CMAKE_BUILD_TYPE MATCHES "^(RelWithDebInfo|Release)$")
    target_compile_options(${target} PRIVATE -O1)
  endif()
endfunction()

if(ARENARPC_TEST_PCH)
  add_executable(arenarpc_test_pch EXCLUDE_FROM_ALL ${PROJECT_SOURCE_DIR}/tests/precompiled.cc)
  arenarpc_test_compile_options(arenarpc_test_pch)
  # The public headers' directory only, no library's definitions: a test may define more macros
  # than the precompiled header was made with, never fewer.
  target_include_directories(arenarpc_test_pch PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_precompile_headers(arenarpc_test_pch PRIVATE ${PROJECT_SOURCE_DIR}/tests/precompiled.h)
endif()

function(arenarpc_test_options target)
  arenarpc_test_compile_options(${target})
  if(ARENARPC_TEST_PCH)
    target_precompile_headers(${target} REUSE_FROM arenarpc_test_pch)
  endif()
endfunction()

function(arenarpc_add_test name)
  cmake_parse_arguments(T "SERIAL" "TIMEOUT;SERIAL_TESTS" "SOURCES;LIBS;LABELS" ${ARGN})
  # The TSan build runs only the concurrency tests: the others stay out of its default build (the
  # target exists, so the settings that follow a call still apply) and are not registered.
  set(tsan_skip OFF)
  if(ARENARPC_SANITIZE MATCHES "thread" AND NOT "concurrency" IN_LIST T_LABELS)
    set(tsan_skip ON)
    add_executable(${name} EXCLUDE_FROM_ALL ${T_SOURCES})
  else()
    add_executable(${name} ${T_SOURCES})
  endif()
  target_link_libraries(${name} PRIVATE ${T_LIBS})
  arenarpc_test_options(${name})
  if(tsan_skip)
    return()
  endif()
  list(LENGTH T_LABELS n_labels)
  if(n_labels GREATER 1)
    # gtest_discover_tests would split a list into separate property arguments.
    message(FATAL_ERROR "arenarpc_add_test(${name}): give at most one label")
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set(props TIMEOUT ${T_TIMEOUT})
  if(T_LABELS)  # an empty LABELS value would swallow the next property name
    list(APPEND props LABELS ${T_LABELS})
  endif()
  if(T_SERIAL)
    list(APPEND props RUN_SERIAL TRUE)
  endif()
  if(T_SERIAL_TESTS)
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 TEST_FILTER "-${T_SERIAL_TESTS}"
                         PROPERTIES ${props})
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 TEST_FILTER "${T_SERIAL_TESTS}"
                         PROPERTIES ${props} RUN_SERIAL TRUE)
    return()
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES ${props})
endfunction()
