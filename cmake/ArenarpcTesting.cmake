find_package(GTest REQUIRED)
include(GoogleTest)
# arenarpc_add_test(<name> SOURCES ... [LIBS ...] [LABELS ...])
# Label "concurrency" marks tests that the ThreadSanitizer build runs (scripts/test.sh tsan).
function(arenarpc_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gmock GTest::gtest_main Threads::Threads)
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT})
endfunction()
