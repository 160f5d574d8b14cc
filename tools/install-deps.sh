#!/usr/bin/env bash
# Installs the Debian 12 packages Strata builds and tests with, when any is missing.
# Quiet and idempotent: with everything present it only checks and exits.
#   tools/install-deps.sh demo         what `make demo` needs: the library, CLI and apps
#   tools/install-deps.sh [test]       also the tests', benchmarks' and their peers' packages
#   tools/install-deps.sh --list SET   print the packages of SET (demo or test), install none
set -euo pipefail

# The library, the `strata` program and the apps (apps/: MPI, PNG, OpenBLAS, FFTW).
demo_packages=(
  g++ make cmake ninja-build pkg-config git
  libhwloc-dev libboost-context-dev nlohmann-json3-dev libfmt-dev libcli11-dev
  libopenmpi-dev openmpi-bin
  libpng-dev          # the hybrid apps write PNG images
  libopenblas-dev     # summa's local products (and `strata bench gemm`)
  libfftw3-dev        # the distributed 2-D FFT app (apps/fft2d) and its tests use serial FFTW
)
# Only for `make test`: test frameworks and tools, and the benchmarks' peers.
test_packages=(
  libgtest-dev libgmock-dev clang-format valgrind
  clang-14 libclang-rt-14-dev  # the layout fuzzer (libFuzzer); the asan and tsan presets
  libomp-14-dev                # OpenMP for clang (the asan preset's openmp backend)
  libtbb-dev                   # `strata bench` graph peers (oneTBB flow_graph)
  libtrilinos-kokkos-dev       # `strata bench` particles/ripple peers (Kokkos Serial)
  libeigen3-dev libboost-graph-dev  # `strata bench` spmv/gemm and bfs peers
  python3-matplotlib  # `strata report` draws its plots with it
  chromium            # the report's test opens the page in a headless browser
  libfftw3-mpi-dev    # `strata bench dist-fft` compares with FFTW's MPI transform
  libscalapack-openmpi-dev  # `strata bench --ranks N dist-summa` compares with pdgemm
  libgdal-dev         # shortest_path's rasters through GDAL (optional for the apps; tested)
)

list_only=0
if [ "${1:-}" = "--list" ]; then
  list_only=1
  shift
fi
case "${1:-test}" in
  demo) packages=("${demo_packages[@]}") ;;
  test) packages=("${demo_packages[@]}" "${test_packages[@]}") ;;
  *) echo "install-deps.sh: unknown set '$1'; expected demo or test" >&2; exit 2 ;;
esac
if [ $list_only -eq 1 ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "strata: installing Debian packages: ${missing[*]}"
run=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then
    run=(sudo env DEBIAN_FRONTEND=noninteractive)
  else
    echo "strata: not root and no sudo; install them with: apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${run[@]}" apt-get update -qq
"${run[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
