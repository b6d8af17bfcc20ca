#!/usr/bin/env bash
# Issue 10, item 7: our `quantscope-cli quantize --format quark` exports of stories260K load with
# transformers' AutoModelForCausalLM + amd-quark 0.13, and their perplexity on the same eval
# windows equals Quantscope's `eval` of the same recipe. Prints a table; exits 1 on a mismatch.
# Needs the venv of scripts/make-quark-venv.sh (6 GB), so it is not part of the CI test command.
#   scripts/check-quark-load.sh [BUILD_DIR]      (default build/release; QS_SHARED_DIR, QS_QUARK_VENV)
#
# Tolerance: relative 1e-4 on perplexity. Both sides dequantize the same codes and scales exactly
# (the README of reference/quark-exports: dequantized file == fake-quantized weights), so the only
# differences are fp32 summation order in matmuls (LibTorch 1.13 + OpenBLAS against PyPI torch's
# MKL/oneDNN) and, for fp8 W8A8, activations that land on the other side of an e4m3 rounding
# boundary because of those last-bit differences. docs/evaluation.md takes 1e-4 relative as the
# bound for two independent fp32 forwards of this model; a packing, scale or zero-point mistake
# moves perplexity by far more than that (one wrong nibble order: > 1e-2).
set -euo pipefail
cd "$(dirname "$0")/.."
cli=$(realpath "${1:-build/release}/bin/quantscope-cli")
shared=${QS_SHARED_DIR:-../shared}
venv=${QS_QUARK_VENV:-/work/venvs/quark}
model=$shared/models/stories260K
eval_text=$shared/data/tinystories-eval.txt
tol=1e-4
if [ ! -x "$venv/bin/python" ]; then
  echo "no venv at $venv: run scripts/make-quark-venv.sh" >&2
  exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

status=0
echo "| export | excluded | Quantscope eval of the recipe | Quantscope eval of the export | transformers + Quark | relative diff (recipe vs transformers) | |"
echo "|---|---|---|---|---|---|---|"
# check NAME SCHEME EXCLUDE...
check() {
  local name=$1 scheme=$2; shift 2
  local excl=()
  [ $# -eq 0 ] || excl=(--exclude-layers "$@")
  "$cli" quantize "$model" --quant-scheme "$scheme" "${excl[@]}" \
    --calib-data "$shared/data/tinystories-calib.txt" --calib-seq-len 256 --num-calib-data 15 \
    --format quark --out "$tmp/$name" --quiet > "$tmp/$name.log" 2>&1 ||
    { cat "$tmp/$name.log" >&2; return 1; }
  local ours folder theirs
  ours=$("$cli" eval "$model" --recipe "$tmp/$name/quantscope_recipe.json" --data "$eval_text" \
           --eval-seq-len 256 --calib-data "$shared/data/tinystories-calib.txt" --calib-seq-len 256 \
           --num-calib-data 15 --json --quiet | sed -n 's/.*"perplexity": \([0-9.]*\).*/\1/p' | head -1)
  folder=$("$cli" eval "$tmp/$name" --data "$eval_text" --eval-seq-len 256 --json --quiet |
           sed -n 's/.*"perplexity": \([0-9.]*\).*/\1/p' | head -1)
  theirs=$("$venv/bin/python" scripts/check_quark_load.py "$tmp/$name" "$eval_text" 256)
  local verdict
  verdict=$(awk -v a="$ours" -v b="$theirs" -v t="$tol" 'BEGIN {
    d = (a - b) / a; if (d < 0) d = -d; printf "%.2e %s", d, (d <= t ? "ok" : "MISMATCH") }')
  echo "| $name ($scheme) | $* | $ours | $folder | $theirs | ${verdict% *} | ${verdict#* } |"
  [ "${verdict#* }" = ok ] || status=1
}
check fp8 fp8 lm_head
# No exclusions: the head stays float in every Quantscope export, so the exporter must exclude it
# itself (without it transformers initialises the head's missing scales: perplexity 512).
check int8_wo_no_exclusions w_int8_per_tensor_sym
check uint4_wo_32 uint4_wo_32 lm_head '*down_proj' '*gate_proj' '*up_proj'
# MX weights (down_proj's 172 inputs would need a sixth scale the loader does not allocate).
# Weight-only: MX W+A rows differ from Quark by its activation rounding gap (docs/results.md).
check mxfp4_weight_only mxfp4_weight_only lm_head '*down_proj'
check mxfp6_e3m2_wo w_mxfp6_e3m2 lm_head '*down_proj'
check mxfp6_e2m3_wo w_mxfp6_e2m3 lm_head '*down_proj'
exit $status
