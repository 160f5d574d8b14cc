# Builds and runs tests/consumer/project against Strata. MODE=install installs the
# build tree into a private prefix first and checks the install itself (what it exports,
# links and targets, its pkg-config files and components); MODE=subdirectory builds
# Strata from source inside the project.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("$ ${ARGN}\n${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
  set(output "${out}" PARENT_SCOPE)
endfunction()
# Runs a command that must fail; `output` holds what it said.
function(run_failing)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("$ ${ARGN}\n${out}")
  if(rc EQUAL 0)
    message(FATAL_ERROR "succeeded, expected a failure: ${ARGN}")
  endif()
  set(output "${out}" PARENT_SCOPE)
endfunction()
function(expect what text regex)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${what}: expected to match '${regex}'")
  endif()
endfunction()

# The README's example, as a user copies it: the first ```cpp block.
file(READ ${STRATA_SOURCE}/README.md readme)
string(FIND "${readme}" "```cpp\n" at)
string(SUBSTRING "${readme}" ${at} -1 readme)
string(REGEX REPLACE "^```cpp\n" "" readme "${readme}")
string(FIND "${readme}" "```" end)
string(SUBSTRING "${readme}" 0 ${end} example)
file(WRITE ${WORK}/readme_example.cpp "${example}")

set(configure ${CMAKE_COMMAND} -S ${CMAKE_CURRENT_LIST_DIR}/project -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release
    -DSTRATA_README_EXAMPLE=${WORK}/readme_example.cpp)
set(components "")
foreach(comp cuda openmp mpi)
  string(TOUPPER ${comp} upper)
  if(ENABLE_${upper})
    list(APPEND components ${comp})
  else()
    list(APPEND missing ${comp})
  endif()
endforeach()
set(prefix ${WORK}/prefix)
if(MODE STREQUAL "install")
  run(${CMAKE_COMMAND} --install ${STRATA_BUILD} --prefix ${prefix})
  string(REPLACE ";" "\\;" components_arg "${components}")
  run(${configure} -B ${WORK}/build -DCMAKE_PREFIX_PATH=${prefix}
      "-DSTRATA_COMPONENTS=${components_arg}")
else()
  # CUDA is left at its default: under add_subdirectory it is off unless the parent asks.
  # Unoptimized: this mode rebuilds libstrata from source, and what it checks is the
  # integration, not the code (Release took 53 s of CI's serial test time; the install
  # mode checks the optimized library). libstrata is a unity build (src/CMakeLists.txt:
  # 26 s here instead of 43), and the parent sets CMAKE_UNITY_BUILD as a project may: the
  # library's units must not clash when compiled together.
  run(${configure} -B ${WORK}/build -DSTRATA_SOURCE_DIR=${STRATA_SOURCE}
      -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DCMAKE_UNITY_BUILD=ON)
endif()
run(${CMAKE_COMMAND} --build ${WORK}/build --parallel 2)
run(${CMAKE_COMMAND} -E env STRATA_SIM_DEVICES=1 ${WORK}/build/consumer)
if(ENABLE_MPI)
  run(${CMAKE_COMMAND} -E env STRATA_LOG=quiet ${WORK}/build/consumer_dist)
endif()
# The README's example runs, and a bad --strata-* flag ends in a clear message and exit
# status 1, not in std::terminate.
run(${WORK}/build/readme_example)
run_failing(${WORK}/build/readme_example --strata-bogus=1)
expect("README example with a bad flag" "${output}" "unknown command-line flag \"--strata-bogus=1\"")
if(output MATCHES "terminate")
  message(FATAL_ERROR "README example with a bad flag ended in std::terminate")
endif()

if(NOT MODE STREQUAL "install")
  return()
endif()

# Components: each one built is found; one missing (or unknown) fails, naming it.
foreach(comp IN LISTS missing ITEMS fortran)
  run_failing(${configure} -B ${WORK}/build-${comp} -DCMAKE_PREFIX_PATH=${prefix}
              -DSTRATA_COMPONENTS=${comp})
  expect("find_package(strata COMPONENTS ${comp})" "${output}" "component \"${comp}\"")
endforeach()

set(libdir ${prefix}/${LIBDIR})
file(GLOB libraries ${libdir}/libstrata*.so)
set(programs ${prefix}/bin/strata)
list(LENGTH libraries n)
if(BUILD_SHARED AND n EQUAL 0)
  message(FATAL_ERROR "no libstrata*.so under ${libdir}")
endif()

# Only Strata's API is exported: no nlohmann_json, fmt or Boost symbols (template
# instantiations a program's own copy of those libraries could bind to).
foreach(lib IN LISTS libraries)
  run(nm -D -C --defined-only ${lib})
  string(REGEX REPLACE "\n$" "" symbols "${output}")
  string(REPLACE ";" "," symbols "${symbols}")
  string(REPLACE "[" "{" symbols "${symbols}")  # brackets would join CMake list items
  string(REPLACE "]" "}" symbols "${symbols}")
  string(REPLACE "\n" ";" symbols "${symbols}")
  list(LENGTH symbols count)
  message("${lib}: ${count} exported symbols")
  foreach(line IN LISTS symbols)
    string(REGEX REPLACE "^[0-9a-f]* [A-Za-z] " "" symbol "${line}")
    if(symbol MATCHES "^([^(<]* )?(nlohmann|fmt|boost|hwloc)::" OR NOT symbol MATCHES "strata::")
      message(FATAL_ERROR "${lib} exports a symbol that is not Strata's: ${symbol}")
    endif()
  endforeach()
endforeach()

# RUNPATH: only $ORIGIN-relative entries (the build machine's toolkit folders mean nothing
# where the package is installed); no benchmark peer among the libraries linked.
foreach(file IN LISTS libraries programs)
  run(readelf -d ${file})
  string(REGEX MATCHALL "(RUNPATH|RPATH)[^\n]*\\[[^]\n]*\\]" paths "${output}")
  foreach(entry IN LISTS paths)
    string(REGEX REPLACE ".*\\[(.*)\\]" "\\1" entry "${entry}")
    string(REPLACE ":" ";" entry "${entry}")
    foreach(dir IN LISTS entry)
      if(NOT dir MATCHES "^\\$ORIGIN")
        message(FATAL_ERROR "${file} has a hard-coded RUNPATH entry: ${dir}")
      endif()
    endforeach()
  endforeach()
  # libstrata_dist finds libstrata beside it on its own (a dist-only program linked
  # --as-needed does not load it through its own RUNPATH).
  if(file MATCHES "libstrata_dist" AND NOT output MATCHES "RUNPATH[^\n]*\\[\\$ORIGIN\\]")
    message(FATAL_ERROR "${file} has no RUNPATH $ORIGIN to find libstrata beside it")
  endif()
  if(output MATCHES "NEEDED[^\n]*\\[(lib[^]]*(tbb|kokkos|blas|fftw|scalapack|petsc)[^]]*)\\]")
    message(FATAL_ERROR "${file} links a benchmark peer: ${CMAKE_MATCH_1}")
  endif()
endforeach()

# No code for the build machine's CPU in what is installed (unless STRATA_NATIVE_ARCH):
# the producer strings of the debug info name the target (-march=native is recorded as
# the CPU it found), and must say what this compiler targets by default.
file(WRITE ${WORK}/empty.cpp "int strata_consumer_probe() { return 0; }\n")
run(${CXX} -g -c ${WORK}/empty.cpp -o ${WORK}/empty.o)
run(strings -a ${WORK}/empty.o)
string(REGEX MATCH "-march=[^ \n]+" default_march "${output}")
if(NOT NATIVE_ARCH)
  foreach(file IN LISTS libraries programs)
    execute_process(COMMAND strings -a ${file} COMMAND grep "^GNU C" OUTPUT_VARIABLE strings_out)
    string(REGEX MATCHALL "GNU C[^\n]*" producers "${strings_out}")
    foreach(producer IN LISTS producers)
      string(REGEX MATCH "-march=[^ \n]+" march "${producer}")
      if(march AND NOT march STREQUAL default_march)
        message(FATAL_ERROR "${file} holds code compiled with ${march} (the compiler's default "
                            "is '${default_march}'): ${producer}")
      endif()
    endforeach()
  endforeach()
endif()

# The benchmarks (tuned for the build machine, linking every peer) are installed only on
# request; without them `strata bench` says how to get them.
if(INSTALL_BENCH)
  run(${prefix}/bin/strata bench --list)
else()
  file(GLOB_RECURSE installed_bench ${prefix}/*strata-bench*)
  if(installed_bench)
    message(FATAL_ERROR "strata-bench installed without STRATA_INSTALL_BENCH: ${installed_bench}")
  endif()
  run_failing(${prefix}/bin/strata bench --list)
  expect("installed strata bench" "${output}" "STRATA_INSTALL_BENCH=ON")
endif()

# pkg-config: the same program built with only what strata.pc (and strata-dist.pc) say.
find_program(PKG_CONFIG pkg-config REQUIRED)
set(pc_env ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${libdir}/pkgconfig)
set(pc_programs consumer:strata)
if(ENABLE_MPI)
  list(APPEND pc_programs dist_main:strata-dist)
endif()
foreach(pair IN LISTS pc_programs)
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 name)
  list(GET pair 1 package)
  run(${pc_env} ${PKG_CONFIG} --cflags --libs ${package})
  string(STRIP "${output}" flags)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  set(source ${CMAKE_CURRENT_LIST_DIR}/project/${name}.cpp)
  if(name STREQUAL "consumer")
    set(source ${CMAKE_CURRENT_LIST_DIR}/project/main.cpp)
  endif()
  run(${CXX} ${source} ${flags} -Wl,-rpath,${libdir} -o ${WORK}/pc_${name})
  run(${CMAKE_COMMAND} -E env STRATA_SIM_DEVICES=1 STRATA_LOG=quiet ${WORK}/pc_${name})
endforeach()
