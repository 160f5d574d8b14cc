# Fails when a C++ source differs from what clang-format makes of it.
# Usage: cmake -DCLANG_FORMAT=<exe> -DSOURCE_DIR=<root> [-DFIX=ON] -P check_format.cmake
file(GLOB_RECURSE files
  ${SOURCE_DIR}/include/*.hpp ${SOURCE_DIR}/src/*.hpp ${SOURCE_DIR}/src/*.cpp
  ${SOURCE_DIR}/tests/*.hpp ${SOURCE_DIR}/tests/*.cpp ${SOURCE_DIR}/tests/*.cu
  ${SOURCE_DIR}/tools/*.hpp ${SOURCE_DIR}/tools/*.cpp ${SOURCE_DIR}/apps/*.hpp
  ${SOURCE_DIR}/apps/*.cpp ${SOURCE_DIR}/bench/*.hpp ${SOURCE_DIR}/bench/*.cpp)
if(FIX)
  execute_process(COMMAND ${CLANG_FORMAT} -i ${files} RESULT_VARIABLE rc)
else()
  execute_process(COMMAND ${CLANG_FORMAT} --dry-run --Werror ${files} RESULT_VARIABLE rc)
endif()
list(LENGTH files count)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "clang-format: files above are not formatted; run `make format`")
endif()
message(STATUS "clang-format: ${count} files checked")
