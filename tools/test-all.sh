#!/usr/bin/env bash
# `make test` after the default build: its tests, then the suite again under ASan+UBSan,
# then the execution tests under TSan. Each sanitizer build compiles at idle priority
# (SCHED_IDLE) while the stage before it runs its tests, so that it takes only the CPU the
# tests leave: on 2 cores they keep 1.4-1.5 busy on average (the MPI tests, the consumer
# builds and bench.smoke run one at a time; sim devices and MPI ranks wait). Idle-priority
# processes give way to every normal one at once, so the tests run as they would alone.
# A build's output goes to build/<preset>-build.log, printed when the build fails.
set -uo pipefail
cd "$(dirname "$0")/.."

idle=()
if chrt --idle 0 true 2>/dev/null; then idle=(chrt --idle 0); fi

# Configures and builds a preset in the background at idle priority; its pid in $build_pid.
start_build() {
  local preset=$1
  (
    "${idle[@]}" cmake --preset "$preset" && "${idle[@]}" cmake --build --preset "$preset"
  ) > "build/$preset-build.log" 2>&1 &
  build_pid=$!
}

# Waits for the build started last; prints its log and fails if it failed.
finish_build() {
  local preset=$1
  if ! wait "$build_pid"; then
    cat "build/$preset-build.log"
    echo "make test: the $preset build failed (log above: build/$preset-build.log)" >&2
    exit 1
  fi
  echo "make test: the $preset build is done (build/$preset-build.log)"
}

# Interrupted: stop the background build too (it is in this script's process group).
trap 'trap - INT TERM; kill 0' INT TERM

status=0
mkdir -p build
start_build asan
ctest --preset default || status=1
finish_build asan
start_build tsan
ctest --preset asan || status=1
finish_build tsan
ctest --preset tsan || status=1
exit $status
