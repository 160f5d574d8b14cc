# Install rules and the exported package, so that find_package(strata) works.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS strata EXPORT strataTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/strata ${PROJECT_BINARY_DIR}/include/strata
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET strata_dist)
  install(TARGETS strata_dist EXPORT strataTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(TARGET strata_cli)
  install(TARGETS strata_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  # `strata report` looks for its plotting script in ../share/strata from the program.
  install(FILES ${PROJECT_SOURCE_DIR}/tools/strata/strata_report.py
          DESTINATION ${CMAKE_INSTALL_DATADIR}/strata)
endif()

set(STRATA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/strata)
install(EXPORT strataTargets NAMESPACE strata:: DESTINATION ${STRATA_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/strataConfig.cmake.in
  ${PROJECT_BINARY_DIR}/strataConfig.cmake INSTALL_DESTINATION ${STRATA_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/strataConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/strataConfig.cmake ${PROJECT_BINARY_DIR}/strataConfigVersion.cmake
        DESTINATION ${STRATA_CMAKE_DIR})
