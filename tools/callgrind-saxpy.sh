#!/usr/bin/env bash
# Prints the callgrind instruction count of a serial-backend Strata kernel against the raw
# loop, and their ratio (deterministic, unlike timings). Usage:
#   tools/callgrind-saxpy.sh <binary> [N] [max_ratio] [name]
# The binary takes `strata|raw N` and has functions strata_side and raw_side
# (bench/saxpy_callgrind, bench/stencil_callgrind). Exits 1 when the ratio exceeds
# max_ratio (default 1.05).
set -euo pipefail
exe=$1
n=${2:-1000000}
max=${3:-1.05}
name=${4:-callgrind-saxpy}
command -v valgrind >/dev/null || { echo "callgrind-saxpy: valgrind is not installed" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
count() {  # side, function to collect
  valgrind --tool=callgrind --callgrind-out-file="$out/$1.out" --toggle-collect="$2" \
    "$exe" "$1" "$n" >/dev/null 2>"$out/$1.log"
  grep -E '^summary:' "$out/$1.out" | awk '{print $2}'
}
strata=$(count strata '*strata_side*')
raw=$(count raw '*raw_side*')
ratio=$(awk -v s="$strata" -v r="$raw" 'BEGIN { printf "%.4f", s / r }')
echo "{\"bench\": \"$name\", \"size\": $n, \"strata_instructions\": $strata, \"raw_instructions\": $raw, \"ratio\": $ratio}"
awk -v x="$ratio" -v m="$max" 'BEGIN { exit !(x <= m) }' || {
  echo "$name: ratio $ratio exceeds $max" >&2
  exit 1
}
