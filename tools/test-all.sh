#!/usr/bin/env bash
# `make test` after the default build: its tests, then the suite again under ASan+UBSan,
# then the execution tests under TSan. Each sanitizer build compiles at idle priority
# (SCHED_IDLE, idle I/O class) while the stage before it runs its tests, so that it takes
# the CPU the tests leave: on 2 cores they keep about 1.4-1.5 busy on average (the
# multi-rank MPI tests, the consumer builds and bench.smoke run alone; sim devices and MPI
# ranks wait). Idle-priority processes give way to normal ones at once; they still share
# memory bandwidth and caches, which changes timings but no test's outcome (no test has a
# timing threshold). A build's output is printed when it ends (build/<preset>-build.log).
set -uo pipefail
cd "$(dirname "$0")/.."

idle=()
if chrt --idle 0 true 2>/dev/null; then idle+=(chrt --idle 0); fi
if ionice -c 3 true 2>/dev/null; then idle+=(ionice -c 3); fi

build_pid=""
# The background build is a session (and process group) of its own, so that stopping it
# reaches its compilers and nothing outside this script.
stop_build() {
  if [ -n "$build_pid" ]; then kill -TERM -- "-$build_pid" 2>/dev/null || true; fi
}
trap 'stop_build; exit 130' INT TERM HUP
trap stop_build EXIT

# Configures and builds a preset in the background at idle priority.
start_build() {
  local preset=$1
  setsid -w ${idle[@]+"${idle[@]}"} sh -c \
    "cmake --preset $preset && cmake --build --preset $preset" > "build/$preset-build.log" 2>&1 &
  build_pid=$!
}

# Waits for the build started last and prints its output; fails if it failed.
finish_build() {
  local preset=$1 rc=0
  wait "$build_pid" || rc=$?
  build_pid=""
  cat "build/$preset-build.log"
  if [ "$rc" -ne 0 ]; then
    echo "make test: the $preset build failed (exit status $rc; build/$preset-build.log)" >&2
    exit 1
  fi
}

failed=()
mkdir -p build
start_build asan
ctest --preset default || failed+=(default)
finish_build asan
start_build tsan
ctest --preset asan || failed+=(asan)
finish_build tsan
ctest --preset tsan || failed+=(tsan)
if [ ${#failed[@]} -gt 0 ]; then
  echo "make test: tests failed in the ${failed[*]} stage(s)" >&2
  exit 1
fi
