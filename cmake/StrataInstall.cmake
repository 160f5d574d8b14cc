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
if(TARGET strata_bench_program AND STRATA_INSTALL_BENCH)
  # Where `strata bench` looks for it in an install (tools/strata/bench_launcher.cpp).
  install(TARGETS strata_bench_program RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/strata)
endif()

set(STRATA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/strata)
install(EXPORT strataTargets NAMESPACE strata:: DESTINATION ${STRATA_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/strataConfig.cmake.in
  ${PROJECT_BINARY_DIR}/strataConfig.cmake INSTALL_DESTINATION ${STRATA_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/strataConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/strataConfig.cmake ${PROJECT_BINARY_DIR}/strataConfigVersion.cmake
        DESTINATION ${STRATA_CMAKE_DIR})

# pkg-config files (strata.pc, and strata-dist.pc with MPI) for builds without CMake:
#   c++ main.cpp $(pkg-config --cflags --libs strata)
# Relocatable: the prefix is found from the .pc file's own folder.
file(RELATIVE_PATH STRATA_PC_PREFIX_FROM_PC /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" STRATA_PC_PREFIX_FROM_PC "${STRATA_PC_PREFIX_FROM_PC}")
set(STRATA_PC_CFLAGS "")
set(STRATA_PC_LIBS "")
set(STRATA_PC_LIBS_PRIVATE "")
set(STRATA_PC_DIST_LIBS_PRIVATE "")
# What strata::strata hands its consumers, said again for the compiler command line.
get_target_property(_strata_iface strata INTERFACE_LINK_LIBRARIES)
if("OpenMP::OpenMP_CXX" IN_LIST _strata_iface)
  string(APPEND STRATA_PC_CFLAGS " ${OpenMP_CXX_FLAGS}")
  string(APPEND STRATA_PC_LIBS " ${OpenMP_CXX_FLAGS}")
endif()
if(STRATA_ENABLE_CUDA)
  # Link-time paths only: the programs find libcudart as the system does (no RUNPATH).
  foreach(_dir IN LISTS CUDAToolkit_INCLUDE_DIRS)
    string(APPEND STRATA_PC_CFLAGS " -I${_dir}")
  endforeach()
  string(APPEND STRATA_PC_LIBS " -L${CUDAToolkit_LIBRARY_DIR} -lcudart")
endif()
if(NOT STRATA_BUILD_SHARED)
  string(APPEND STRATA_PC_LIBS_PRIVATE " ${HWLOC_LDFLAGS} -lfmt -lboost_context")
  foreach(_lib IN LISTS MPI_CXX_LIBRARIES)
    string(APPEND STRATA_PC_DIST_LIBS_PRIVATE " ${_lib}")
  endforeach()
endif()
set(_pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
configure_file(${PROJECT_SOURCE_DIR}/cmake/strata.pc.in ${PROJECT_BINARY_DIR}/strata.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/strata.pc DESTINATION ${_pc_dir})
if(TARGET strata_dist)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/strata-dist.pc.in ${PROJECT_BINARY_DIR}/strata-dist.pc
                 @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/strata-dist.pc DESTINATION ${_pc_dir})
endif()
