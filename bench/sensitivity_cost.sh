#!/usr/bin/env bash
# What Analyze and the per-layer sensitivity study cost, in the units issue 26 asks for:
#  - analyze in forwards' worth: `analyze --quant-scheme int8` over the calibration windows
#    divided by a plain fp32 `eval` of the same windows (one forward);
#  - a sensitivity row (KL, top-1 agreement and perplexity with the layer alone quantized and
#    with all but the layer) against what measuring it costs without the study: one `eval`
#    process per evaluation (load, calibrate, evaluate), two per row.
# Medians of REPEAT runs, all in this one run (machines here are noisy).
#
#   bench/sensitivity_cost.sh [BUILD_DIR] [MODEL_DIR] [REPEAT]
#
# Default model: the 100M synthetic (`synth --preset 100m`, written to a temporary folder), 16
# calibration windows of 256 of tinystories-calib, 2 evaluation windows of 256 of
# tinystories-eval, two threads (OMP_NUM_THREADS=2).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
model=${2:-}
repeat=${3:-3}
cli=$build/bin/quantscope-cli
shared=${QS_SHARED_DIR:-../shared}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
export QS_CACHE_DIR=off # every evaluation computes its own full-precision side, as a process would
tmp=$(mktemp -d "${TMPDIR:-/tmp}/qs-sensitivity-cost.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ -z "$model" ]; then
  model=$tmp/synth-100m
  "$cli" synth --preset 100m --out "$model" >/dev/null
fi
calib=(--calib-data "$shared/data/tinystories-calib.txt" --num-calib-data 16 --seq-len 256)
evaluation=(--data "$shared/data/tinystories-eval.txt" --eval-seq-len 256 --max-windows 2)

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
seconds() { # COMMAND...: wall seconds of one run
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null
  end=$(date +%s.%N)
  echo "$end - $start" | bc -l
}
timed() { for _ in $(seq "$repeat"); do seconds "$@"; done | median; }

# The linears of block 0 and of the last block: the rows whose evaluations are longest and
# shortest.
layers=$("$cli" inspect "$model" --json | python3 -c '
import json, sys
def walk(node):
    if node.get("kind") == "linear" and node.get("block", -1) >= 0:
        yield node["name"]
    for child in node.get("children", []):
        yield from walk(child)
print("\n".join(walk(json.load(sys.stdin)["tree"])))')
first=$(echo "$layers" | head -1)
last=$(echo "$layers" | tail -1)
rows=$(echo "$layers" | wc -l)

fp=$(timed "$cli" eval "$model" --data "$shared/data/tinystories-calib.txt" --eval-seq-len 256 \
  --max-windows 16 --quiet)
analyze=$(timed "$cli" analyze "$model" --quant-scheme int8 "${calib[@]}" --json --no-channels --quiet)
study=$(timed "$cli" analyze "$model" --quant-scheme int8 "${calib[@]}" --sensitivity \
  "${evaluation[@]}" --json --no-channels --quiet)
alone() { # LAYER: one process measuring the layer alone (everything else excluded)
  local excludes=()
  while read -r other; do [ "$other" = "$1" ] || excludes+=(--exclude-layers "$other"); done <<< "$layers"
  "$cli" eval "$model" --quant-scheme int8 "${calib[@]}" "${evaluation[@]}" "${excludes[@]}" --quiet
}
processFirst=$(timed alone "$first")
processLast=$(timed alone "$last")

python3 - "$fp" "$analyze" "$study" "$rows" "$processFirst" "$processLast" <<'EOF'
import sys
fp, analyze, study, rows, first, last = map(float, sys.argv[1:])
per_row = (study - analyze) / rows
process = (first + last) / 2  # a row's evaluations run from its block on: the mean of both ends
print(f"fp32 eval of the 16 calibration windows   {fp:8.2f} s")
print(f"analyze int8                              {analyze:8.2f} s  = {analyze / fp:5.2f} forwards' worth")
print(f"analyze --sensitivity ({int(rows)} rows)          {study:8.2f} s  -> {per_row:6.3f} s per row (alone + all but)")
print(f"one eval process, first layer alone       {first:8.2f} s")
print(f"one eval process, last layer alone        {last:8.2f} s")
print(f"row in the study against two processes    {2 * process / per_row:8.1f}x cheaper")
EOF
