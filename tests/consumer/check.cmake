# Builds and runs tests/consumer/project against Strata. MODE=install installs the
# build tree into a private prefix first; MODE=subdirectory builds Strata from source.
file(REMOVE_RECURSE ${WORK})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("$ ${ARGN}\n${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()

set(configure ${CMAKE_COMMAND} -S ${CMAKE_CURRENT_LIST_DIR}/project -B ${WORK}/build
    -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release)
if(MODE STREQUAL "install")
  run(${CMAKE_COMMAND} --install ${STRATA_BUILD} --prefix ${WORK}/prefix)
  run(${configure} -DCMAKE_PREFIX_PATH=${WORK}/prefix)
else()
  # CUDA off keeps this second build of libstrata short; the install test covers CUDA.
  run(${configure} -DSTRATA_SOURCE_DIR=${STRATA_SOURCE} -DSTRATA_ENABLE_CUDA=OFF)
endif()
run(${CMAKE_COMMAND} --build ${WORK}/build)
run(${CMAKE_COMMAND} -E env STRATA_SIM_DEVICES=1 ${WORK}/build/consumer)
if(EXISTS ${WORK}/build/consumer_dist)
  run(${CMAKE_COMMAND} -E env STRATA_LOG=quiet ${WORK}/build/consumer_dist)
endif()
