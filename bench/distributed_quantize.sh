#!/usr/bin/env bash
# What spreading a GPTQ quantize over ranks buys on this machine, against the baselines measured
# in the same run: one process with 1 thread, one process with T threads, and T ranks of 1 thread
# (--nproc T). Prints the median wall seconds and median seconds per block of each over REPS runs,
# the speed-ups against 1 x 1, and whether the files of T ranks equal one process's byte for byte
# (they must at 1 thread each; T threads in one process may differ in the last bits, since a
# matmul split over threads rounds otherwise).
#
#   bench/distributed_quantize.sh [BUILD_DIR] [T] [REPS]
#
# Model: a 2-block synthetic Llama at 70B's proportions and 1/8 its width (hidden 1024,
# intermediate 3584, 8 heads, 1 KV head), written once to $TMPDIR; uint4 per group 128 with
# GPTQ on 16 calibration windows of 256 tokens of calib-general (two batches of 2048 tokens: two
# shards).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
threads=${2:-2}
reps=${3:-3}
cli=$PWD/$build/bin/quantscope-cli
shared=${QS_SHARED_DIR:-$PWD/../shared}
work=$(mktemp -d "${TMPDIR:-/tmp}/qs-distq-XXXXXX")
trap 'rm -rf "$work"' EXIT
export QS_CACHE_DIR=off
"$cli" synth --arch llama --out "$work/model" --hidden 1024 --intermediate 3584 --layers 2 \
    --heads 8 --kv-heads 1 --head-dim 128 --vocab 32000 --max-positions 2048 --dtype BF16 \
    --seed 1 >/dev/null
args=(quantize "$work/model" --quant-scheme uint4_wo_128 --quant-algo gptq
      --calib-data "$shared/data/calib-general.txt" --num-calib-data 16 --seq-len 256 --json --quiet)
configs=("1x1:--threads 1" "1x$threads:--threads $threads" "${threads}x1:--threads 1 --nproc $threads")
for rep in $(seq "$reps"); do
    for cfg in "${configs[@]}"; do
        name=${cfg%%:*}
        read -r -a flags <<<"${cfg#*:}"
        rm -rf "$work/$name"
        start=$(date +%s.%N)
        OMP_NUM_THREADS=${name#*x} "$cli" "${args[@]}" "${flags[@]}" --out "$work/$name" \
            >"$work/$name.$rep.json"
        end=$(date +%s.%N)
        echo "$name $start $end $work/$name.$rep.json" >>"$work/runs"
    done
    cmp -s "$work/1x1/model.safetensors" "$work/${threads}x1/model.safetensors" &&
        echo same >>"$work/same" || echo differs >>"$work/same"
done
python3 - "$work/runs" "$work/same" "$threads" <<'PY'
import json, statistics, sys
runs, same, t = sys.argv[1], sys.argv[2], sys.argv[3]
wall, block = {}, {}
for line in open(runs):
    name, s, e, f = line.split()
    wall.setdefault(name, []).append(float(e) - float(s))
    block.setdefault(name, []).extend(json.load(open(f))["block_seconds"])
base_w, base_b = statistics.median(wall["1x1"]), statistics.median(block["1x1"])
print("config (ranks x threads) | median wall s | median s/block | speed-up (wall) | speed-up (block)")
for name in wall:
    w, b = statistics.median(wall[name]), statistics.median(block[name])
    print(f"{name:>8} | {w:7.2f} | {b:6.2f} | {base_w / w:5.2f}x | {base_b / b:5.2f}x")
verdicts = open(same).read().split()
print(f"{t} ranks x 1 thread vs 1 process x 1 thread, files byte for byte: "
      f"{verdicts.count('same')} of {len(verdicts)} runs equal")
PY
