# Echo example targets (included by examples/CMakeLists.txt): the echo service library and
# echo_server, the server of the memory-mode benchmark (bench/compare_modes).
find_package(gflags CONFIG REQUIRED)

add_library(arenarpc_echo_service STATIC ${CMAKE_CURRENT_LIST_DIR}/echo_service.cc)
target_include_directories(arenarpc_echo_service PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(arenarpc_echo_service PUBLIC arenarpc_echo_proto)

add_executable(echo_server ${CMAKE_CURRENT_LIST_DIR}/echo_server.cc)
target_link_libraries(echo_server PRIVATE arenarpc_echo_service arenarpc_runtime gflags)
# The same server able to register in etcd (--registry_url etcd://..., docs/cluster.md). A separate
# binary: the etcd component brings gRPC's libraries (~7 MB of resident memory at start), which
# would distort the benchmark server's RSS.
if(ARENARPC_WITH_GRPC)
  add_executable(etcd_echo_server ${CMAKE_CURRENT_LIST_DIR}/echo_server.cc)
  target_link_libraries(etcd_echo_server PRIVATE arenarpc_echo_service arenarpc_runtime gflags
    arenarpc_etcd)
  target_compile_definitions(etcd_echo_server PRIVATE ARENARPC_ECHO_WITH_ETCD)
endif()
