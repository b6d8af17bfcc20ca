#!/usr/bin/env bash
# SHA-256 of every file a matrix of exports writes, one line per file, for checking that a
# refactoring leaves the bytes alone: run it with the binary before and after the change and
# diff the two outputs (docs/engine.md, "Checking a refactoring").
#
#   scripts/export-digests.sh [BUILD_DIR] > digests.txt     (default build/release)
#
# The matrix: stories260K (../shared or QS_SHARED_DIR) and a synthetic Llama with planted
# outliers, through every export format, GGUF weight type and algorithm, with exclusions, a KV
# cache scheme and unfit layers skipped. Exit 1 when a quantize run fails (its stderr is
# printed), so a refusal cannot pass for equal bytes.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
cli=$build/bin/quantscope-cli
shared=${QS_SHARED_DIR:-../shared}
stories=$shared/models/stories260K
calibtext=$shared/data/tinystories-calib.txt
for f in "$cli" "$stories/config.json" "$calibtext"; do
  [ -e "$f" ] || { echo "export-digests: $f is missing" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME=$tmp/cache
"$cli" synth --arch llama --out "$tmp/synth" --seed 1 > /dev/null
calib=(--calib-data "$calibtext" --num-calib-data 8 --seq-len 64)

run() { # LABEL MODEL ARGS...
  local label=$1 model=$2
  shift 2
  if ! "$cli" quantize "$model" "$@" --out "$tmp/out/$label" --quiet > "$tmp/log" 2>&1; then
    echo "export-digests: $label failed:" >&2
    cat "$tmp/log" >&2
    exit 1
  fi
}

excl=(--exclude-layers '*down_proj' '*lm_head')
# Quark's packed int4 holds output features in multiples of 8: stories260K's 172-wide MLP is not
excl4=(--exclude-layers '*down_proj' '*gate_proj' '*up_proj' '*lm_head')
run fake-int8 "$stories" --quant-scheme int8 "${calib[@]}" --format fake
run fake-w8a8-kv "$stories" --quant-scheme w_int8_a_int8_per_token_dynamic --kv-cache-dtype fp8 \
  "${calib[@]}" --format fake
run quark-uint4-gptq "$stories" --quant-scheme uint4_wo_32 --quant-algo gptq "${excl4[@]}" \
  "${calib[@]}" --format quark
run quark-fp8 "$stories" --quant-scheme w_fp8_a_fp8 "${calib[@]}" --format quark
run quark-int4-awq "$stories" --quant-scheme int4_wo_32 --quant-algo awq "${excl4[@]}" \
  "${calib[@]}" --format quark
run awq-uint4 "$stories" --quant-scheme uint4_wo_32 "${excl4[@]}" "${calib[@]}" --format awq
run quark-int8-smooth "$stories" --quant-scheme int8 --quant-algo smoothquant "${calib[@]}" \
  --format quark
run quark-rotation "$stories" --quant-scheme int4_wo_32 --quant-algo rotation,gptq "${excl4[@]}" \
  "${calib[@]}" --format quark
run quark-autosmooth "$tmp/synth" --quant-scheme int8 --quant-algo autosmoothquant \
  "${calib[@]}" --format quark
echo '{"format": "quantscope-recipe", "version": 1}' > "$tmp/fp32.json"
cat > "$tmp/int8_g32.json" << 'JSON'
{"format": "quantscope-recipe", "version": 1,
 "global": {"weight": {"dtype": "int8", "qscheme": "per_group", "ch_axis": 1,
                       "is_dynamic": false, "symmetric": true, "round_method": "half_even",
                       "scale_type": "float", "observer_cls": "PerGroupMinMaxObserver",
                       "group_size": 32},
            "input_tensors": null, "output_tensors": null, "bias": null}}
JSON
for t in q8_0 q4_0 q4_1 q4_k q6_k f16 bf16 f32; do
  run "gguf-fp32-$t" "$stories" --recipe "$tmp/fp32.json" --format gguf --gguf-type "$t"
done
run gguf-int8g32-auto "$stories" --recipe "$tmp/int8_g32.json" --exclude-layers '*down_proj' \
  --format gguf
run gguf-int8g32-q8_0 "$stories" --recipe "$tmp/int8_g32.json" --exclude-layers '*down_proj' \
  --format gguf --gguf-type q8_0
run gguf-uint4 "$stories" --quant-scheme uint4_wo_32 "${excl[@]}" "${calib[@]}" --format gguf
run gguf-int4 "$stories" --quant-scheme int4_wo_32 "${calib[@]}" --unfit-policy skip --format gguf
run onnx-int8 "$stories" --quant-scheme int8 "${calib[@]}" --format onnx
run onnx-uint4 "$stories" --quant-scheme uint4_wo_32 "${excl[@]}" "${calib[@]}" --format onnx
run multi "$tmp/synth" --quant-scheme int8 "${calib[@]}" --format fake,quark,onnx
run synth-uint4-skip "$tmp/synth" --quant-scheme uint4_wo_128 --unfit-policy skip "${calib[@]}" \
  --format quark

# Quantscope writes its recipe beside every export; its provenance names the temporary folder
# and the engine version, which differ between two runs of this script by construction.
cd "$tmp/out"
find . -type f ! -name quantscope_recipe.json | LC_ALL=C sort | xargs sha256sum
find . -name quantscope_recipe.json | LC_ALL=C sort | while read -r f; do
  printf '%s  %s (provenance removed)\n' \
    "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r.pop("provenance",None); print(json.dumps(r,sort_keys=True))' "$f" | sha256sum | cut -d' ' -f1)" "$f"
done
