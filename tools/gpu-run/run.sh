#!/usr/bin/env bash
# Runs on the GPU machine from the repository's root (tools/gpu-run/pack.sh made .devrun):
# the CUDA tests, the launch experiment, the CUDA benchmarks, the CPU benchmarks whose
# figures 2 cores keep noisy (CPU_BENCHES) and, unless NO_MPI is set, MPI_BENCHES (default
# dist-latency at 2 ranks, dist-fft at 4, 2, 1; NAME:RANKS, NAME alone at 2) with Debian's
# Open MPI. Logs go to $OUT (or /tmp).
# BUDGET (seconds, default 400) stops starting new steps when the time is nearly spent.
cd "$(dirname "$0")"
out=${OUT:-/tmp}
t0=$SECONDS
left() { echo $((${BUDGET:-400} - (SECONDS - t0))); }
log() { echo "=== $* ($(date +%T), $(left) s left)"; }
p=/tmp/strata-gpu-run
mkdir -p $p && tar -xJf payload.tar.xz -C $p || exit 1
export LD_LIBRARY_PATH=$p/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib
if [ ! -e /usr/local/cuda/lib64/libcublas.so.13 ]; then
  c=$(find / -xdev -name 'libcublas.so.13' 2>/dev/null | head -1)
  [ -n "$c" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$c")
fi
export PATH=$p/bin:$PATH
# Each run's logs start empty (the loops below append).
: >"$out/experiment.log"
: >"$out/cuda_bench.log"
{
  log start
  nvidia-smi -L
  nproc
  timeout 30 strata info 2>&1 | head -30
  for t in ${TESTS:-strata_tensor_cuda_tests strata_cuda_check strata_cuda_kernel_suite_test \
    strata_cuda_real_gpu_test strata_cuda_kernel_fault_test strata_apps_cuda_tests}; do
    log "$t"
    # By path: death tests re-execute argv[0], which a bare name found on PATH breaks.
    timeout "${TT:-90}" "$p/bin/$t" --gtest_brief=1 2>&1 | tail -100
    echo "rc=${PIPESTATUS[0]}"
  done
} >"$out/gpu.log" 2>&1
grep -E "^===|PASSED|FAILED|SKIPPED  \]|rc=|Failure|rror" "$out/gpu.log" | head -70
# SPINS="0 1000" runs the experiment and the CUDA benchmarks once per completion-worker
# spin window (STRATA_CUDA_SPIN_US); unset, once with the library's default.
for spin in ${SPINS:-default}; do
  if [ "$spin" = default ]; then unset STRATA_CUDA_SPIN_US; else export STRATA_CUDA_SPIN_US=$spin; fi
  log "launch_experiment, spin $spin"
  timeout 60 launch_experiment 2>&1 | sed "s/^/[spin $spin] /" | tee -a "$out/experiment.log"
  log "cuda-bench, spin $spin"
  for b in ${CUDA_BENCHES:-cuda-tensor-saxpy cuda-tensor-stencil cuda-copy cuda-triad cuda-axpy}; do
    [ "$(left)" -lt 200 ] && { echo "skipped $b: time"; continue; }
    timeout 60 strata bench "$b" --json --no-progress --repeats 10 2>&1 | grep '"bench"' |
      sed "s/^{/{\"spin_us\":\"$spin\",/"
  done | tee -a "$out/cuda_bench.log"
done
unset STRATA_CUDA_SPIN_US
# The figures that 2 cores keep noisy (issues 16, 17, 21), on the GPU machine's 16 cores.
log cpu-bench
for b in ${CPU_BENCHES:-ripple-scaling hybrid-jacobi sim-copy}; do
  [ "$(left)" -lt 120 ] && { echo "skipped $b: time"; continue; }
  timeout 60 strata bench "$b" --json --no-progress 2>&1 | grep '"bench"'
done | tee "$out/cpu_bench.log"
[ -n "${NO_MPI:-}" ] && exit 0
log mpi
cp -a $p/root/. / && ln -sf /usr/bin/orterun /usr/bin/mpiexec
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_osc=^ucx OMPI_MCA_mtl=^ofi,psm,psm2
for b in ${MPI_BENCHES:-dist-latency:2 dist-fft:4,2,1}; do
  case $b in *:*) ;; *) b=$b:2 ;; esac  # NAME alone: 2 ranks
  t=$(($(left) - 10))
  [ $t -gt 20 ] && timeout $t strata bench --ranks "${b#*:}" "${b%%:*}" --json --no-progress 2>&1 |
    grep '"bench"'
done | tee "$out/mpi_bench.log"
log end
