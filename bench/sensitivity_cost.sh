#!/usr/bin/env bash
# What Analyze and the per-layer sensitivity study cost, in the units issue 26 asks for:
#  - analyze in forwards' worth: `analyze --quant-scheme int8` over the calibration windows
#    divided by a plain fp32 `eval` of the same windows (one forward);
#  - a sensitivity row (KL, top-1 agreement and perplexity with the layer alone quantized and
#    with all but the layer) against what measuring it costs without the study: one `eval`
#    process per evaluation (load, calibrate, evaluate), two per row;
#  - each at its matmul floor: the time its linear layers' matmuls alone take on this machine
#    (quantscope-bench-matmul times each of the model's shapes, in this run), so what the
#    measured figures spend outside the matmuls, and what a goal leaves for that, can be read
#    off.
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
for tool in "$cli" "$build/bin/quantscope-bench-matmul"; do
  [ -x "$tool" ] || { echo "sensitivity_cost.sh: $tool not found (build $build first)" >&2; exit 1; }
done
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

# One walk of the model's tree: the block linears in order (printed: the first is block 0's and
# the last the last block's, the rows whose evaluations are longest and shortest), and in
# $shapes what the matmul floor below needs: each linear's block and every weight shape of the
# blocks' linears and of the head, with its count.
shapes=$tmp/shapes.json
"$cli" inspect "$model" --json > "$tmp/inspect.json"
layers=$(python3 - "$tmp/inspect.json" "$shapes" <<'EOF'
import collections, json, sys
names, blocks, linears, heads = [], [], collections.Counter(), collections.Counter()
def walk(node):
    if node.get("kind") == "linear" and node.get("block", -1) >= 0:
        names.append(node["name"])
        blocks.append(node["block"])
        linears["x".join(map(str, node["shape"]))] += 1
    if node.get("kind") == "head":
        heads["x".join(map(str, node["shape"]))] += 1
    for child in node.get("children", []):
        walk(child)
walk(json.load(open(sys.argv[1]))["tree"])
json.dump({"blocks": blocks, "linears": linears, "heads": heads}, open(sys.argv[2], "w"))
print("\n".join(names))
EOF
)
if grep -q '\.experts\.' <<< "$layers"; then
  # A study groups a mixture of experts' linears into one row per kind, and each expert sees only
  # the tokens routed to it: neither the per-row division below nor the matmul floor holds.
  echo "sensitivity_cost.sh: $model has experts; this benchmark measures dense models" >&2
  exit 1
fi
first=$(echo "$layers" | head -1)
last=$(echo "$layers" | tail -1)
rows=$(echo "$layers" | wc -l)

# The matmul floor: the blocks' linears (all blocks) and the head, over one forward step of the
# calibration (2048 tokens: 8 windows of 256, the CPU batch) and of a row's evaluation (its 2
# windows, 512 tokens). Prints: seconds of the blocks' linears over the 16 windows, of the head
# over them, of one block's linears over a row's 2 windows, of the head over them, and the mean
# number of blocks a row's evaluation runs (its layer's block to the last). Measured before the
# runs and after them; the lesser of each counts (a floor is the fastest these matmuls run here,
# and the machine's load only ever adds time).
floor_figures() {
  python3 - "$shapes" "$build/bin/quantscope-bench-matmul" <<'EOF'
import json, subprocess, sys
shapes = json.load(open(sys.argv[1]))
def seconds(tokens, counts):
    specs = [f"{tokens}:{shape}*{n}" for shape, n in counts.items()]
    out = subprocess.run([sys.argv[2], *specs], check=True, capture_output=True, text=True).stdout
    last = out.strip().splitlines()[-1].split()
    assert last[0] == "floor_ms", out
    return float(last[1]) / 1e3
blocks = shapes["blocks"]
n = len(set(blocks))
steps = 2  # 16 windows of 256 in steps of 2048 tokens
print(steps * seconds(2048, shapes["linears"]), steps * seconds(2048, shapes["heads"]),
      seconds(512, shapes["linears"]) / n, seconds(512, shapes["heads"]),
      sum(n - b for b in blocks) / len(blocks))
EOF
}
floorBefore=$(floor_figures)

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

floorAfter=$(floor_figures)

python3 - "$fp" "$analyze" "$study" "$rows" "$processFirst" "$processLast" \
  "$floorBefore" "$floorAfter" <<'EOF'
import sys
fp, analyze, study, rows, first, last = map(float, sys.argv[1:7])
before, after = ([float(x) for x in a.split()] for a in sys.argv[7:9])
blocks, head, rowBlock, rowHead, meanBlocks = (min(b, a) for b, a in zip(before, after))
per_row = (study - analyze) / rows
process = (first + last) / 2  # a row's evaluations run from its block on: the mean of both ends
print(f"fp32 eval of the 16 calibration windows   {fp:8.2f} s")
print(f"analyze int8                              {analyze:8.2f} s  = {analyze / fp:5.2f} forwards' worth")
print(f"analyze --sensitivity ({int(rows)} rows)          {study:8.2f} s  -> {per_row:6.3f} s per row (alone + all but)")
print(f"one eval process, first layer alone       {first:8.2f} s")
print(f"one eval process, last layer alone        {last:8.2f} s")
print(f"row in the study against two processes    {2 * process / per_row:8.1f}x cheaper")
# The floors: the matmuls alone, nothing else (no attention, norms, statistics, KL).
print(f"matmuls alone over the 16 windows: blocks {blocks:.2f} s, head {head:.2f} s "
      f"({(blocks + head) / fp:.0%} of the forward)")
floor = 3 * blocks  # the full-precision pass, the quantized pass, each linear on its own
print(f"analyze at its matmul floor (3 x blocks)  {floor:8.2f} s  = {floor / fp:5.2f} forwards' worth;"
      f" outside the matmuls {analyze - floor:.2f} s, at 2.5 forwards' worth {2.5 * fp - floor:.2f} s")
row_floor = 2 * (meanBlocks * rowBlock + rowHead)  # two evaluations from the layer's block on
print(f"row at its matmul floor ({meanBlocks:.1f} blocks + head, x2) {row_floor:6.3f} s  -> "
      f"{2 * process / row_floor:5.1f}x; outside the matmuls {per_row - row_floor:.3f} s,"
      f" at 20x {2 * process / 20 - row_floor:.3f} s")
EOF
