#!/usr/bin/env bash
# Stages what the GPU checks need for a machine that has a GPU but none of Strata's Debian
# packages (docs/cuda.md "What has run where"): the executables built here (stripped), the
# shared libraries they load (all but glibc, libstdc++, the CUDA driver and cuBLAS, which
# the GPU machine has), Open MPI's and PMIx's runtime files at their Debian paths (run.sh
# copies them to / there), the launch experiment, and run.sh. Writes .devrun/ at the
# repository's root (git-ignored); on the GPU machine: `bash .devrun/run.sh` from the root
# with .devrun carried along.
#   tools/gpu-run/pack.sh [BUILD_DIR]          default build/default, configured with CUDA
# EXTRA_BINS="..." adds executables (e.g. the CPU suites to run on many cores).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
b=${1:-$root/build/default}
out=$root/.devrun
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$out" "$stage/bin" "$stage/lib" "$stage/root"
bins="$b/tests/cuda/strata_cuda_check $b/tests/cuda/strata_cuda_kernel_suite_test
$b/tests/cuda/strata_cuda_real_gpu_test $b/tests/cuda/strata_cuda_kernel_fault_test
$b/tests/apps/strata_apps_cuda_tests $b/tests/tensor/strata_tensor_cuda_tests
$b/tools/strata/strata $b/tools/strata/strata-bench ${EXTRA_BINS:-}"
for f in $bins; do cp -L "$f" "$stage/bin/"; done
# The experiment: Strata's kernels instantiated in it, compiled for sm_90 (H100, H200).
/usr/local/cuda/bin/nvcc -I"$root/include" -I"$b/include" -isystem=/usr/local/cuda/include \
  -DBOOST_ALL_NO_LIB -DBOOST_CONTEXT_DYN_LINK -DFMT_SHARED -O2 -DNDEBUG \
  --generate-code=arch=compute_90,code=[compute_90,sm_90] --extended-lambda \
  --expt-relaxed-constexpr -std=c++20 "$root/tools/gpu-run/launch_experiment.cu" \
  -o "$stage/bin/launch_experiment" -L"$b/src" -lstrata -lcudart
strip "$stage"/bin/* 2>/dev/null || true
for d in /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 /usr/share/openmpi \
         /usr/share/pmix /etc/openmpi /usr/bin/orterun /usr/bin/orted; do
  if [ -e "$d" ]; then
    mkdir -p "$stage/root$(dirname "$d")"
    cp -a "$d" "$stage/root$(dirname "$d")/"
  fi
done
skip='linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libstdc\+\+|libgcc_s|libcuda\.so|libnvidia|libcublas'
export LD_LIBRARY_PATH=$b/src${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for o in "$stage"/bin/* $(find "$stage/root" -name '*.so*' -type f); do ldd "$o" 2>/dev/null || true; done |
  awk '/=> \//{print $1, $3}' | sort -u | grep -Ev "$skip" |
  while read -r name path; do cp -L "$path" "$stage/lib/$name"; done
tar -cJf "$out/payload.tar.xz" -C "$stage" .
cp "$root/tools/gpu-run/run.sh" "$out/run.sh"
ls -la "$out/payload.tar.xz"
