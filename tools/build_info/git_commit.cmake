# Writes OUTPUT (#define STRATA_GIT_COMMIT "...") from `git describe` of SOURCE_DIR,
# touching it only when the text changes. "unknown" outside a git checkout (a tarball).
execute_process(COMMAND git -C ${SOURCE_DIR} describe --always --dirty --abbrev=12
                RESULT_VARIABLE rc OUTPUT_VARIABLE commit ERROR_QUIET
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
endif()
set(text "#define STRATA_GIT_COMMIT \"${commit}\"\n")
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} old)
  if(old STREQUAL text)
    return()
  endif()
endif()
file(WRITE ${OUTPUT} "${text}")
