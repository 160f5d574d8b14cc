# User-facing options. The backend options default to what the machine has: each is ON
# when its toolchain or library is found, and can be forced OFF.
include(CheckLanguage)
include(GNUInstallDirs)

option(STRATA_BUILD_TESTS "Build the test suite (top-level builds only)" ON)
# The sanitizer presets turn it off: benchmarks do not run under sanitizers (bench.smoke is
# a default-build test), and building them there only costs CI time.
option(STRATA_BUILD_BENCH "Build the benchmarks and `strata bench` (top-level builds only)" ON)
option(STRATA_TEST_PACKAGING "Test find_package/add_subdirectory consumers in ctest" ON)
option(BUILD_SHARED_LIBS "Build libstrata as a shared library" ON)
set(STRATA_SANITIZE "" CACHE STRING "Sanitizers for Strata's own targets, e.g. address,undefined")

find_package(OpenMP QUIET COMPONENTS CXX)
find_package(MPI QUIET COMPONENTS CXX)
check_language(CUDA)

set(_strata_have_openmp OFF)
if(OpenMP_CXX_FOUND)
  set(_strata_have_openmp ON)
endif()
set(_strata_have_mpi OFF)
if(MPI_CXX_FOUND)
  set(_strata_have_mpi ON)
endif()
set(_strata_have_cuda OFF)
if(CMAKE_CUDA_COMPILER)
  set(_strata_have_cuda ON)
endif()

option(STRATA_ENABLE_OPENMP "OpenMP backend" ${_strata_have_openmp})
option(STRATA_ENABLE_MPI "MPI (distributed) backend" ${_strata_have_mpi})
option(STRATA_ENABLE_CUDA "CUDA backend (needs nvcc)" ${_strata_have_cuda})

if(STRATA_ENABLE_OPENMP AND NOT OpenMP_CXX_FOUND)
  message(FATAL_ERROR "STRATA_ENABLE_OPENMP=ON but no OpenMP was found for ${CMAKE_CXX_COMPILER_ID}")
endif()
if(STRATA_ENABLE_MPI AND NOT MPI_CXX_FOUND)
  message(FATAL_ERROR "STRATA_ENABLE_MPI=ON but no MPI was found (Debian: libopenmpi-dev)")
endif()
if(STRATA_ENABLE_CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    message(FATAL_ERROR "STRATA_ENABLE_CUDA=ON but no CUDA compiler was found (set CMAKE_CUDA_COMPILER)")
  endif()
  # Every CUDA target links the shared runtime, as libstrata does: one CUDA runtime per
  # process, so that streams and events made by libstrata serve the users' kernels.
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
endif()

# Flags shared by every target Strata builds itself (never by consumers): warnings and
# the sanitizers of the `asan` preset. A target, not global CMAKE_CXX_FLAGS.
add_library(strata_build_flags INTERFACE)
target_compile_options(strata_build_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wconversion -Wno-sign-conversion
   -Wno-missing-field-initializers>)
# Tests write kernels as lambdas whose parameters are named after the data they receive,
# so shadowing is expected there (target property STRATA_ALLOW_SHADOW).
target_compile_options(strata_build_flags INTERFACE
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<NOT:$<BOOL:$<TARGET_PROPERTY:STRATA_ALLOW_SHADOW>>>>:-Wshadow>)
if(STRATA_SANITIZE)
  target_compile_options(strata_build_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${STRATA_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all>)
  target_link_options(strata_build_flags INTERFACE -fsanitize=${STRATA_SANITIZE})
endif()
