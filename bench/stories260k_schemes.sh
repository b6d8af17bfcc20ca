#!/usr/bin/env bash
# Perplexity of stories260K under the schemes of the quantization-core issue (eval on
# tinystories-eval at seq 256, calibration on tinystories-calib), then the top outlier layers of
# the naive W8A8 analysis. usage: bench/stories260k_schemes.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
cli=${1:-build/release}/bin/quantscope-cli
model=../shared/models/stories260K
eval_args=(--data ../shared/data/tinystories-eval.txt --eval-seq-len 256 --json -q)
calib=(--calib-data ../shared/data/tinystories-calib.txt)
row() { # label, then extra eval flags
  local label=$1; shift
  local ppl
  ppl=$("$cli" eval "$model" "${eval_args[@]}" "$@" | /usr/bin/python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["perplexity"])')
  printf '%-48s %10s\n' "$label" "$ppl"
}
printf '%-48s %10s\n' scheme perplexity
row "fp32"
row "int8 per-channel weight-only (recipe)" --recipe examples/recipes/int8_wo_per_channel.json
row "int8 per-tensor weight-only (w_int8_per_tensor_sym)" --quant-scheme w_int8_per_tensor_sym
row "int4_wo_32, *down_proj excluded" --quant-scheme int4_wo_32 --exclude-layers '*down_proj'
row "uint4_wo_32, *down_proj excluded" --quant-scheme uint4_wo_32 --exclude-layers '*down_proj'
row "int4_wo_per_channel, *down_proj excluded" --quant-scheme int4_wo_per_channel --exclude-layers '*down_proj'
row "int8 (W+A per-tensor static, naive)" --quant-scheme int8 "${calib[@]}"
row "W8A8 dynamic per-token (w_int8_a_int8_per_token_dynamic)" --quant-scheme w_int8_a_int8_per_token_dynamic
row "fp8 (W+A E4M3 per-tensor static)" --quant-scheme fp8 "${calib[@]}"
row "mxfp4 (W static, A dynamic)" --quant-scheme mxfp4
echo
echo "naive W8A8 (int8) analysis, top outlier layers:"
"$cli" analyze "$model" --quant-scheme int8 "${calib[@]}" --top 8 | sed -n '/top outlier/,$p'
