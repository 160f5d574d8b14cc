# Compiles SOURCE with CLANGXX against the public headers (INCLUDE1, INCLUDE2) and the
# built LIBRARY, with FLAGS (a list; -O2 when not given), then runs it (the tests clang.*,
# tests/CMakeLists.txt).
get_filename_component(libdir "${LIBRARY}" DIRECTORY)
if(NOT DEFINED FLAGS)
  set(FLAGS -O2)
endif()
execute_process(
  COMMAND "${CLANGXX}" -std=gnu++20 ${FLAGS} -pthread "-I${INCLUDE1}" "-I${INCLUDE2}" "${SOURCE}"
          "${LIBRARY}" "-Wl,-rpath,${libdir}" -o "${OUT}"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "clang++ could not compile or link ${SOURCE} against the public headers")
endif()
execute_process(COMMAND "${OUT}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${OUT} (built by clang++) failed: ${rc}")
endif()
