# cuda.kernels_in_device_image (tests/cuda/device_image_check.cu): compiles the file's
# device pass to a cubin and requires both kernels' instantiations of Strata's kernel
# template among the cubin's function symbols. Runs without a GPU.
# -DNVCC= -DSRC= -DOUT= -DINCLUDES=a;b -DREADELF=
set(_args -std=c++20 --expt-relaxed-constexpr --extended-lambda -cubin -arch=sm_90 ${SRC} -o ${OUT})
foreach(_i IN LISTS INCLUDES)
  list(APPEND _args -I${_i})
endforeach()
execute_process(COMMAND ${NVCC} ${_args} RESULT_VARIABLE _rc ERROR_VARIABLE _err OUTPUT_QUIET)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "nvcc -cubin failed (${_rc}):\n${_err}")
endif()
execute_process(COMMAND ${READELF} -sW ${OUT} OUTPUT_VARIABLE _syms RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "readelf -s ${OUT} failed")
endif()
foreach(_kernel plain_kernel thread_array_kernel)
  # The kernel template strata::cuda::k::run<..., <kernel>, ...> as a FUNC symbol.
  string(REGEX MATCH "FUNC[^\n]*_ZN6strata[^\n]*run[^\n]*${_kernel}" _found "${_syms}")
  if(NOT _found)
    message(FATAL_ERROR "the device image has no kernel for ${_kernel}: a launch on a GPU "
                        "would fail with cudaErrorInvalidDeviceFunction. Symbols:\n${_syms}")
  endif()
endforeach()
message(STATUS "device image holds both kernels")
