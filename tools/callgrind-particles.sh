#!/usr/bin/env bash
# Prints the callgrind instruction counts of the particles push (x += v * dt) as a Strata
# kernel over AoSoA<16> (plain and with hot/cold field groups) and SoA record arrays
# (serial backend) and as the hand-written SoA loop, per particle, and the ratios to the
# hand-written loop. Usage:
#   tools/callgrind-particles.sh <particles_callgrind binary> [N] [max_ratio]
# Exits 1 when a Strata side exceeds max_ratio (default 1.5) times the raw loop's count:
# a body that is not vectorized costs about 4x (SSE2, 4 floats a vector).
set -euo pipefail
exe=$1
n=${2:-100000}
max=${3:-1.5}
command -v valgrind >/dev/null || { echo "callgrind-particles: valgrind is not installed" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
count() {  # side, function to collect
  valgrind --tool=callgrind --callgrind-out-file="$out/$1.out" --toggle-collect="$2" \
    "$exe" "$1" "$n" >/dev/null 2>"$out/$1.log" || { cat "$out/$1.log" >&2; exit 1; }
  grep -E '^summary:' "$out/$1.out" | awk '{print $2}'
}
raw=$(count raw '*raw_side*')
status=0
for side in aosoa16 aosoa16hot soa; do
  s=$(count "$side" '*strata_side*')
  ratio=$(awk -v s="$s" -v r="$raw" 'BEGIN { printf "%.4f", s / r }')
  per=$(awk -v s="$s" -v n="$n" 'BEGIN { printf "%.3f", s / n }')
  echo "{\"bench\": \"callgrind-particles\", \"layout\": \"$side\", \"size\": $n, \"strata_instructions\": $s, \"raw_instructions\": $raw, \"strata_per_particle\": $per, \"ratio\": $ratio}"
  awk -v x="$ratio" -v m="$max" 'BEGIN { exit !(x <= m) }' || {
    echo "callgrind-particles: $side ratio $ratio exceeds $max (not vectorized?)" >&2
    status=1
  }
done
exit $status
