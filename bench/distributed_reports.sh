#!/usr/bin/env bash
# The reports a distributed run gathers (issue 30), one process against two ranks on
# stories260K: analyze (uint4 per group 4 + GPTQ, 179 calibration windows of 64 tokens: six
# shards), analyze --sensitivity (35 rows over 8 evaluation windows of 256 tokens) and eval with
# its fidelity report (int8 static, 40 windows of 256 tokens: five shards). Prints each one's
# median wall seconds over REPS runs at --nproc 1 and 2 and a digest of its --json output without
# the lines that say when it ran and how long it took ("seconds", "created_at",
# "tokens_per_second") and without eval's "distributed" block: the digests of 1 and 2 ranks must
# be equal.
#
#   bench/distributed_reports.sh [BUILD_DIR] [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
reps=${2:-3}
cli=$PWD/$build/bin/quantscope-cli
model=../shared/models/stories260K
eval_text=../shared/data/tinystories-eval.txt
calib_text=../shared/data/tinystories-calib.txt
export QS_CACHE_DIR=off
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
declare -A runs=(
    [analyze]="analyze $model --quant-scheme w_uint4_per_group_asym --group-size 4 --quant-algo gptq --calib-data $eval_text --num-calib-data 179 --seq-len 64"
    [sensitivity]="analyze $model --quant-scheme w_uint4_per_group_asym --group-size 4 --calib-data $calib_text --num-calib-data 8 --seq-len 64 --sensitivity --data $eval_text --max-windows 8 --eval-seq-len 256"
    [fidelity]="eval $model --data $eval_text --eval-seq-len 256 --max-windows 40 --quant-scheme int8 --calib-data $calib_text --num-calib-data 64 --seq-len 64"
)
digest() {
    grep -v '"seconds":\|"created_at":\|"tokens_per_second":' "$1" |
        python3 -c "import sys,json; j=json.load(sys.stdin); j.pop('distributed',None); print(json.dumps(j,indent=1))" |
        sha256sum | cut -c1-16
}
for name in analyze sensitivity fidelity; do
    for n in 1 2; do
        times=()
        for _ in $(seq "$reps"); do
            start=$(date +%s.%N)
            # shellcheck disable=SC2086
            "$cli" ${runs[$name]} --threads 1 --json --quiet --nproc "$n" >"$work/$name.$n.json" 2>/dev/null
            times+=("$(echo "$(date +%s.%N) - $start" | bc)")
        done
        median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((reps + 1) / 2))p")
        printf '%-12s %d rank(s): median %6.2f s  output %s\n' "$name" "$n" "$median" \
            "$(digest "$work/$name.$n.json")"
    done
done
