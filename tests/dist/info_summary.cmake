# `strata info --json` under mpiexec: the cluster's summary counts each host's hardware
# once (it summed every rank's copy: 3 packages for 3 ranks on a 1-package machine), and
# says how many ranks and hosts there are. Compares with the summary of one process.
# cmake -DSTRATA=<strata> -DMPIEXEC=<mpiexec> -P info_summary.cmake
execute_process(COMMAND ${STRATA} info --json OUTPUT_VARIABLE alone RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "strata info --json failed: ${rc}")
endif()
execute_process(COMMAND ${MPIEXEC} -n 3 ${STRATA} info --json OUTPUT_VARIABLE cluster
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mpiexec -n 3 strata info --json failed: ${rc}")
endif()
foreach(key packages cores pus numa_nodes host_memory_bytes)
  string(JSON one GET "${alone}" summary ${key})
  string(JSON all GET "${cluster}" summary ${key})
  if(NOT one STREQUAL all)
    message(FATAL_ERROR "summary.${key}: ${all} under mpiexec -n 3, ${one} for one process; "
                        "expected the host counted once")
  endif()
endforeach()
string(JSON ranks GET "${cluster}" summary ranks)
string(JSON hosts GET "${cluster}" summary hosts)
if(NOT ranks EQUAL 3 OR NOT hosts EQUAL 1)
  message(FATAL_ERROR "summary: ranks ${ranks}, hosts ${hosts}; expected 3 and 1")
endif()
message(STATUS "cluster summary matches one process's: ok")
