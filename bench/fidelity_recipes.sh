#!/usr/bin/env bash
# Fidelity of a set of recipes against the full-precision model (the `eval` fidelity block):
# uint4_wo_32 by round to nearest, GPTQ and AWQ, and W8A8 int8 / fp8 static with and without
# rotation, on one model. Prints one row per recipe: perplexity, mean KL ± error and its
# bootstrap 95 % interval, 99 % KL, RMS Δp, same top ± error. The full-precision side is
# computed by the first row and read from the cache by the others.
#
#   bench/fidelity_recipes.sh MODEL_DIR [BUILD_DIR] [EVAL_WINDOWS]
#
# Calibration: 15 windows of 256 of tinystories-calib; evaluation: windows of 256 of
# tinystories-eval (all 44 by default). down_proj is excluded from uint4_wo_32 (stories260K's 172
# and the synthetic models' 688 inputs are no multiple of 32).
set -euo pipefail
cd "$(dirname "$0")/.."
model=$1
build=${2:-build/release}
windows=${3:-0}
cli=$build/bin/quantscope-cli
shared=${QS_SHARED_DIR:-../shared}
common=(--data "$shared/data/tinystories-eval.txt" --eval-seq-len 256
        --calib-data "$shared/data/tinystories-calib.txt" --num-calib-data 15 --seq-len 256
        --json --quiet)
[ "$windows" -gt 0 ] && common+=(--max-windows "$windows")
uint4=(--quant-scheme uint4_wo_32 --exclude-layers '*down_proj')
recipes=(
  "uint4_wo_32 RTN|${uint4[*]}"
  "uint4_wo_32 GPTQ|${uint4[*]} --quant-algo gptq"
  "uint4_wo_32 AWQ|${uint4[*]} --quant-algo awq"
  "int8 W8A8 static|--quant-scheme int8"
  "int8 W8A8 static + rotation|--quant-scheme int8 --quant-algo rotation"
  "fp8 W8A8 static|--quant-scheme fp8"
  "fp8 W8A8 static + rotation|--quant-scheme fp8 --quant-algo rotation"
)
printf '%-30s %10s %22s %21s %9s %8s %16s %7s\n' recipe perplexity "mean KL ± se" "bootstrap 95%" \
  "99% KL" "RMS Δp" "same top %" seconds
for entry in "${recipes[@]}"; do
  name=${entry%%|*}
  read -r -a flags <<< "${entry#*|}"
  start=$(date +%s.%N)
  json=$("$cli" eval "$model" "${common[@]}" "${flags[@]}")
  end=$(date +%s.%N)
  python3 - "$name" "$json" "$start" "$end" <<'EOF'
import json, sys
name, j, start, end = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
f = j["fidelity"]
q99 = next(q["value"] for q in f["kl_quantiles"] if q["level"] == 0.99)
lo, hi = f["kl_mean_bootstrap_95"]
print(f"{name:30s} {j['perplexity']:10.4f} {f['kl_mean']['value']:.5f} ± {f['kl_mean']['error']:.5f}"
      f"    {lo:.5f} .. {hi:.5f} {q99:9.4f} {100 * f['delta_p_rms']['value']:7.2f}%"
      f" {100 * f['same_top']['value']:7.2f} ± {100 * f['same_top']['error']:4.2f}"
      f" {end - start:7.1f}{'  (fp cached)' if f['reference_from_cache'] else ''}")
if not f["reference_from_cache"]:
    print(f"{'  (fp32 reference)':30s} {f['perplexity_base']['value']:10.4f}")
EOF
done
