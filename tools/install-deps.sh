#!/usr/bin/env bash
# Installs the Debian 12 packages Strata builds and tests with, when any is missing.
# Quiet and idempotent: with everything present it only checks and exits.
set -euo pipefail

packages=(
  g++ make cmake ninja-build pkg-config git
  libhwloc-dev libboost-context-dev nlohmann-json3-dev libfmt-dev libcli11-dev
  libgtest-dev libgmock-dev clang-format valgrind
  clang-14 libclang-rt-14-dev
  libopenmpi-dev openmpi-bin
  libtbb-dev
  libtrilinos-kokkos-dev
  libeigen3-dev libboost-graph-dev
  python3-matplotlib  # `strata report` draws its plots with it
  chromium            # the report's test opens the page in a headless browser
  libpng-dev          # the hybrid apps write PNG images
  libopenblas-dev     # `strata bench gemm` compares with cblas_dgemm/sgemm
  libfftw3-dev        # the distributed 2-D FFT app (apps/fft2d) and its tests use serial FFTW
  libfftw3-mpi-dev    # `strata bench dist-fft` compares with FFTW's MPI transform
  libscalapack-openmpi-dev  # `strata bench --ranks N dist-summa` compares with pdgemm
)

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
