# A must-not-compile test: SOURCE compiles as it stands (the control, proving the file is
# otherwise valid) and fails with -DSTRATA_SHOULD_FAIL, with a message matching EXPECT.
# -DCXX=<compiler> -DFLAGS=<a|b|c> -DSOURCE=<file> -DEXPECT=<regex>
# -DONLY=<a|b> replaces -fsyntax-only (nvcc has no such flag).
string(REPLACE "|" ";" FLAGS "${FLAGS}")
if(DEFINED ONLY)
  string(REPLACE "|" ";" ONLY "${ONLY}")
else()
  set(ONLY -fsyntax-only)
endif()
execute_process(COMMAND ${CXX} ${FLAGS} ${ONLY} ${SOURCE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "control compile of ${SOURCE} failed:\n${out}")
endif()
execute_process(COMMAND ${CXX} ${FLAGS} -DSTRATA_SHOULD_FAIL ${ONLY} ${SOURCE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled with STRATA_SHOULD_FAIL; it must not")
endif()
if(NOT out MATCHES "${EXPECT}")
  message(FATAL_ERROR "${SOURCE} failed to compile, but not with '${EXPECT}':\n${out}")
endif()
message(STATUS "${SOURCE}: rejected as expected")
