include(CMakePackageConfigHelpers)
set(ARENARPC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/arenarpc)
install(DIRECTORY include/arenarpc DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        PATTERN "grpc" EXCLUDE)
install(TARGETS ${ARENARPC_EXPORTED_TARGETS} EXPORT arenarpcTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT arenarpcTargets NAMESPACE arenarpc:: DESTINATION ${ARENARPC_CMAKE_DIR})
configure_package_config_file(cmake/arenarpcConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/arenarpcConfig.cmake INSTALL_DESTINATION ${ARENARPC_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/arenarpcConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/arenarpcConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/arenarpcConfigVersion.cmake
        DESTINATION ${ARENARPC_CMAKE_DIR})
configure_file(cmake/arenarpc.pc.in ${CMAKE_CURRENT_BINARY_DIR}/arenarpc.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/arenarpc.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
