# Compiles SOURCE with CLANGXX against the public headers (INCLUDE1, INCLUDE2) and the
# built LIBRARY, then runs it (the test clang.headers_and_fibers, tests/CMakeLists.txt).
get_filename_component(libdir "${LIBRARY}" DIRECTORY)
execute_process(
  COMMAND "${CLANGXX}" -std=gnu++20 -O2 -pthread "-I${INCLUDE1}" "-I${INCLUDE2}" "${SOURCE}"
          "${LIBRARY}" "-Wl,-rpath,${libdir}" -o "${OUT}"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "clang++ could not compile or link ${SOURCE} against the public headers")
endif()
execute_process(COMMAND "${OUT}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${OUT} (built by clang++) failed: ${rc}")
endif()
