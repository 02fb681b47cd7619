# cmake --install: headers, libraries, the CMake package (arenarpc, component grpc), the proto
# helper, pkg-config files (arenarpc.pc, arenarpc-grpc.pc) and the tools that were built.
include(CMakePackageConfigHelpers)
set(ARENARPC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/arenarpc)
set(lib_destinations
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# arenarpc::arenarpc and the layers under it: needs protobuf, snappy and zlib, never gRPC.
install(DIRECTORY include/arenarpc DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        PATTERN "grpc" EXCLUDE PATTERN "grpc_memory" EXCLUDE)
install(TARGETS ${ARENARPC_EXPORTED_TARGETS} EXPORT arenarpcTargets ${lib_destinations})
install(EXPORT arenarpcTargets NAMESPACE arenarpc:: DESTINATION ${ARENARPC_CMAKE_DIR})

# arenarpc::grpc: its own export file, loaded only for find_package(arenarpc COMPONENTS grpc).
if(ARENARPC_WITH_GRPC)
  install(DIRECTORY include/arenarpc/grpc_memory include/arenarpc/grpc
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/arenarpc)
  # arenarpc::etcd (etcd:// naming and registration) needs gRPC too: same export set.
  install(TARGETS arenarpc_grpc arenarpc_etcd arenarpc_etcd_proto EXPORT arenarpcGrpcTargets
          ${lib_destinations})
  install(EXPORT arenarpcGrpcTargets NAMESPACE arenarpc:: DESTINATION ${ARENARPC_CMAKE_DIR})
endif()

configure_package_config_file(cmake/arenarpcConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/arenarpcConfig.cmake INSTALL_DESTINATION ${ARENARPC_CMAKE_DIR})
# 0.x: a minor release may break the API, so only the same major.minor is compatible.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/arenarpcConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/arenarpcConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/arenarpcConfigVersion.cmake
              cmake/ArenarpcProto.cmake
        DESTINATION ${ARENARPC_CMAKE_DIR})

# pkg-config: prefix relative to the .pc file, so that the installed tree can be moved.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(ARENARPC_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(ARENARPC_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  set(ARENARPC_PC_PREFIX "\${pcfiledir}/..")
  string(REPLACE "/" ";" parts "${CMAKE_INSTALL_LIBDIR}")
  foreach(part ${parts})
    string(APPEND ARENARPC_PC_PREFIX "/..")
  endforeach()
  set(ARENARPC_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(ARENARPC_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(ARENARPC_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
set(pc_files arenarpc)
if(ARENARPC_WITH_GRPC)
  list(APPEND pc_files arenarpc-grpc)
endif()
foreach(pc ${pc_files})
  configure_file(cmake/${pc}.pc.in ${CMAKE_CURRENT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()

# Tools: the load generator and the echo servers, when this build has them.
foreach(tool arenarpc_press echo_server etcd_echo_server grpc_echo_server)
  if(TARGET ${tool})
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()
