# User-facing options. The backend options default to what the machine has: each is ON
# when its toolchain or library is found, and can be forced OFF.
include(CheckLanguage)
include(GNUInstallDirs)

option(STRATA_BUILD_TESTS "Build the test suite (top-level builds only)" ON)
# The sanitizer presets turn it off: benchmarks do not run under sanitizers (bench.smoke is
# a default-build test), and building them there only costs CI time.
option(STRATA_BUILD_BENCH "Build the benchmarks and `strata bench` (top-level builds only)" ON)
option(STRATA_TEST_PACKAGING "Test find_package/add_subdirectory consumers in ctest" ON)
# Shared or static libstrata. Not option(BUILD_SHARED_LIBS): that cache variable is global
# and would turn every add_library() of a parent project that adds Strata with
# add_subdirectory into a shared library. A parent's own BUILD_SHARED_LIBS is the default.
if(DEFINED BUILD_SHARED_LIBS)
  set(_strata_shared_default ${BUILD_SHARED_LIBS})
else()
  set(_strata_shared_default ON)
endif()
option(STRATA_BUILD_SHARED "Build libstrata and libstrata_dist as shared libraries"
       ${_strata_shared_default})
# Installed artifacts run on any x86-64 (or whatever the compiler targets by default);
# code tuned for the build machine is opt-in. The benchmarks and the apps' kernels are
# always built for this machine: they measure it, and are not installed (below).
option(STRATA_NATIVE_ARCH "Compile libstrata and the strata program with -march=native" OFF)
# `strata bench` runs the program strata-bench (the benchmarks and their peers: oneTBB,
# Kokkos, OpenBLAS, FFTW, ScaLAPACK, PETSc, cuBLAS; built with -march=native), which is
# built with STRATA_BUILD_BENCH but installed only on request.
option(STRATA_INSTALL_BENCH "Install strata-bench (tuned for the build machine) under libexec"
       OFF)
set(STRATA_SANITIZE "" CACHE STRING "Sanitizers for Strata's own targets, e.g. address,undefined")

find_package(OpenMP QUIET COMPONENTS CXX)
find_package(MPI QUIET COMPONENTS CXX)
# CUDA is looked for by default only when Strata is the top-level project: in a parent's
# build (add_subdirectory) an installed toolkit must not switch CUDA on by itself; the
# parent sets STRATA_ENABLE_CUDA=ON when it wants it.
if(STRATA_TOP_LEVEL OR STRATA_ENABLE_CUDA)
  check_language(CUDA)
endif()

set(_strata_have_openmp OFF)
if(OpenMP_CXX_FOUND)
  set(_strata_have_openmp ON)
endif()
set(_strata_have_mpi OFF)
if(MPI_CXX_FOUND)
  set(_strata_have_mpi ON)
endif()
set(_strata_have_cuda OFF)
if(CMAKE_CUDA_COMPILER AND STRATA_TOP_LEVEL)
  set(_strata_have_cuda ON)
endif()

option(STRATA_ENABLE_OPENMP "OpenMP backend" ${_strata_have_openmp})
option(STRATA_ENABLE_MPI "MPI (distributed) backend" ${_strata_have_mpi})
option(STRATA_ENABLE_CUDA "CUDA backend (needs nvcc)" ${_strata_have_cuda})
# Device lambdas (`[] STRATA_FN (...)`) need nvcc's --extended-lambda in the user's CUDA
# files. Strata's own targets get it (strata_build_flags); a consumer adds it to its own
# targets, or turns this on to have strata::strata carry it to every CUDA file linking it.
option(STRATA_CUDA_EXTENDED_LAMBDA
       "strata::strata adds --extended-lambda to the CUDA files of every target linking it" OFF)

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
# Strata's own CUDA files (tests, benchmarks) may write kernels as device lambdas, as
# docs/cuda.md shows users; consumers opt in (STRATA_CUDA_EXTENDED_LAMBDA, docs/cuda.md).
target_compile_options(strata_build_flags INTERFACE $<$<COMPILE_LANGUAGE:CUDA>:--extended-lambda>)
# Start-up cost of every test process (CI runs each of about 1,200 tests as a process of
# its own, three times over): link only the shared libraries a binary uses. clang, unlike
# Debian's GCC, does not default to --as-needed, so the sanitizer builds loaded GDAL's
# hundred libraries into every test through the apps' static library. The sanitizer
# builds (never installed) also pack their relative relocations (DT_RELR), which needs
# glibc 2.36 to load: not for the default build, whose libraries are installed and
# shipped. Session 64: an AddressSanitizer test binary's empty run 0.35 -> 0.20 s with
# --as-needed, 0.16 s with both.
include(CheckLinkerFlag)
check_linker_flag(CXX "LINKER:--as-needed" STRATA_LINKER_AS_NEEDED)
if(STRATA_LINKER_AS_NEEDED)
  target_link_options(strata_build_flags INTERFACE "LINKER:--as-needed")
endif()
if(STRATA_SANITIZE)
  check_linker_flag(CXX "LINKER:-z,pack-relative-relocs" STRATA_LINKER_RELR)
  if(STRATA_LINKER_RELR)
    target_link_options(strata_build_flags INTERFACE "LINKER:-z,pack-relative-relocs")
  endif()
endif()
if(STRATA_SANITIZE)
  target_compile_options(strata_build_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${STRATA_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all>)
  target_link_options(strata_build_flags INTERFACE -fsanitize=${STRATA_SANITIZE})
  # What Strata's own sources test for (fiber switch annotations, tests that skip under a
  # sanitizer): GCC defines __SANITIZE_ADDRESS__, clang 14 (the sanitizer presets' compiler)
  # only answers __has_feature, so the build says it once for both.
  if(STRATA_SANITIZE MATCHES "address")
    target_compile_definitions(strata_build_flags INTERFACE STRATA_ASAN=1)
  endif()
  if(STRATA_SANITIZE MATCHES "thread")
    target_compile_definitions(strata_build_flags INTERFACE STRATA_TSAN=1)
  endif()
endif()
