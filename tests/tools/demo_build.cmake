# `make demo` builds the library, `strata` and the apps only, with only their Debian
# packages: no test tools (clang, valgrind, GoogleTest, chromium) and no benchmark peers
# (oneTBB, Kokkos, Eigen, Boost.Graph). Checks install-deps.sh's sets, the Makefile's demo
# recipe, and configures the `demo` preset's options with the test-only packages hidden.
# -DSOURCE_DIR -DWORK -DGENERATOR -DCXX
cmake_minimum_required(VERSION 3.25)  # IN_LIST, string(JSON)
set(test_only clang-14 libclang-rt-14-dev valgrind clang-format libgtest-dev libgmock-dev
    chromium libtbb-dev libtrilinos-kokkos-dev libeigen3-dev libboost-graph-dev)
foreach(set demo test)
  execute_process(COMMAND ${SOURCE_DIR}/tools/install-deps.sh --list ${set}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install-deps.sh --list ${set} failed (${rc}): ${err}")
  endif()
  string(REGEX REPLACE "\n$" "" out "${out}")
  string(REPLACE "\n" ";" packages_${set} "${out}")
endforeach()
foreach(p IN LISTS test_only)
  if(p IN_LIST packages_demo)
    message(FATAL_ERROR "`make demo` would install the test-only package ${p}")
  endif()
  if(NOT p IN_LIST packages_test)
    message(FATAL_ERROR "`make test` does not install ${p}")
  endif()
endforeach()

execute_process(COMMAND make -n -C ${SOURCE_DIR} demo OUTPUT_VARIABLE recipe RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT recipe MATCHES "install-deps.sh demo" OR
   NOT recipe MATCHES "--preset demo" OR recipe MATCHES "ctest|--preset default")
  message(FATAL_ERROR "`make demo` is not the demo build:\n${recipe}")
endif()

# The demo preset's cache variables, configured without the test-only packages.
file(READ ${SOURCE_DIR}/CMakePresets.json presets)
string(JSON n LENGTH "${presets}" configurePresets)
math(EXPR last "${n} - 1")
set(demo_vars "")
foreach(i RANGE ${last})
  string(JSON name GET "${presets}" configurePresets ${i} name)
  if(name STREQUAL "demo")
    string(JSON vars GET "${presets}" configurePresets ${i} cacheVariables)
    string(JSON m LENGTH "${vars}")
    math(EXPR m "${m} - 1")
    foreach(k RANGE ${m})
      string(JSON key MEMBER "${vars}" ${k})
      string(JSON value GET "${vars}" ${key})
      list(APPEND demo_vars -D${key}=${value})
    endforeach()
  endif()
endforeach()
if(NOT demo_vars)
  message(FATAL_ERROR "CMakePresets.json has no demo preset")
endif()
file(REMOVE_RECURSE ${WORK})
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK} -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX}
          ${demo_vars} -DSTRATA_ENABLE_CUDA=OFF -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON
          -DCMAKE_DISABLE_FIND_PACKAGE_TBB=ON -DCMAKE_DISABLE_FIND_PACKAGE_Eigen3=ON
          -DSTRATA_VALGRIND=STRATA_VALGRIND-NOTFOUND
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the demo configuration needs a test-only package (above)")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK} --target help OUTPUT_VARIABLE targets)
foreach(t strata strata_cli saxpy machine_tour)
  if(NOT targets MATCHES "(^|\n)${t}[:\n ]")
    message(FATAL_ERROR "the demo build has no target ${t}")
  endif()
endforeach()
foreach(t strata_bench_program strata_exec_tests strata_bench)
  if(targets MATCHES "(^|\n)${t}[:\n ]")
    message(FATAL_ERROR "the demo build builds ${t}, which only `make test` needs")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK})
