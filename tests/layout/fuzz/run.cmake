# Builds the layout fuzz target with clang and runs it briefly (a ctest).
# -DCLANG=... -DSOURCE_DIR=... -DBINARY_DIR=... -DWORK=... -DRUNS=...
set(build ${WORK}/build)
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/layout/fuzz -B ${build} -G Ninja
          -DCMAKE_CXX_COMPILER=${CLANG} -DSTRATA_SOURCE_DIR=${SOURCE_DIR}
          -DSTRATA_BINARY_DIR=${BINARY_DIR}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "layout fuzz: configuring with ${CLANG} failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${build} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "layout fuzz: building with ${CLANG} failed")
endif()
# A fresh corpus each run: the test's result must not depend on what earlier runs in this
# build tree found (a grown corpus reaches inputs a fresh run at this seed does not).
file(REMOVE_RECURSE ${WORK}/corpus)
file(MAKE_DIRECTORY ${WORK}/corpus)
execute_process(COMMAND ${build}/fuzz_layout -runs=${RUNS} -max_len=256 -seed=1
                        -artifact_prefix=${WORK}/ ${WORK}/corpus
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "layout fuzz: the fuzz target failed (exit ${rc})")
endif()
