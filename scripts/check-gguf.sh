#!/usr/bin/env bash
# llama.cpp, the consumer of `quantize --format gguf`, generates from Quantscope's GGUF exports of
# stories260K (llama.cpp's `llama` architecture) and of the tiny Qwen1.5-MoE (`qwen2moe`) the text
# that Quantscope generates from the same weights: greedy, 40 new tokens, three prompts. Fails
# (exit 1) on any disagreement.
#
#   scripts/check-gguf.sh [BUILD_DIR]    (default build/release; needs ../shared or QS_SHARED_DIR)
#
# llama.cpp is npm node-llama-cpp 3.22.1 with its prebuilt CPU binary, installed once into a
# cache folder outside the repository, ${XDG_CACHE_HOME:-~/.cache}/quantscope/node-llama-cpp-3.22.1,
# lean (--omit=optional: none of its GPU builds); it runs with gpu false, build "never" and one
# thread (docs/pitfalls: its default of 4 threads on 2 cores is a thousand times slower).
#
# What is compared, per file and prompt (scripts/check-gguf.mjs prints the table):
# - tokens: the prompt's ids with BOS, llama.cpp's tokenizer (from the file's tokenizer.ggml.*)
#   against Quantscope's (`generate --json` prompt_ids): must be equal.
# - F32 files, which hold the fp32 weights exactly: llama.cpp's reference stories260K.gguf (made by
#   llama.cpp's converter, not by Quantscope) and our `--gguf-type f32` export, each against
#   `quantscope-cli generate` on the Hugging Face folder ../shared/models/stories260K. Both
#   engines compute in fp32 (llama.cpp with an F32 KV cache, see below); the generated ids and
#   text must be equal.
# - Q8_0 and Q4_0 files, against `quantscope-cli generate` on the same .gguf file: Quantscope's
#   GGUF reader decodes each block with ggml's formulas to fp32 (core/io/GgmlDequantize), so both
#   engines hold the same weights bit for bit. Four files: ggml's reference rounding of the fp32
#   weights (nothing quantized by the engine, `--gguf-type q8_0` / `q4_0`, as llama-quantize
#   writes them) and the engine's own codes (int8 symmetric per group of 32 -> Q8_0, int4_wo_32
#   -> Q4_0, down_proj excluded: its 172 inputs are no multiple of 32, so it is F32 in every file).
#   The arithmetic is not the same in one documented place: ggml's CPU matmul of a Q8_0 or Q4_0
#   weight first rounds its input to Q8_0 blocks (ggml-cpu's quantize_row_q8_0: per 32 values
#   d = amax/127 stored as f16, codes round-half-even(x * 127/amax); ggml's vec_dot_type, which
#   nothing switches off), Quantscope multiplies by the fp32 activations. That moves the top-two
#   margins by up to 0.26 nats here, so a greedy step whose top two tokens are that close can
#   flip. The ids must therefore be equal or, at the first differing step k, the flip must be
#   that rounding: teacher-forced along Quantscope's ids, the reference forward
#   tests/reference/hf_reference.py (plain PyTorch in fp32, independent of the engine; it
#   matches Quantscope's forward to 2.5e-5 in the logits) on the converted fp32 checkpoint of the
#   file picks Quantscope's token at k, and the same forward with the inputs of the file's Q8_0/
#   Q4_0 matmuls rounded as ggml does (hf_reference's rounded_inputs) picks llama.cpp's. No
#   tolerance: either the emulated rounding reproduces llama.cpp's choice or the case fails. (The
#   emulation is not bit-exact: an activation within fp32 summation noise of a rounding boundary
#   can take the other code; measured in docs/exporters.md.) A wrong block, scale or permutation
#   changes the text in the first steps, where the emulation does not follow llama.cpp.
# - qwen2moe: ../shared/models/tiny-families/qwen2_moe with its dense layer 1 replaced by a copy of
#   layer 2's MoE block (scripts/make-qwen2moe-allmoe.py: llama.cpp's qwen2moe has experts in
#   every layer, so the export refuses the shared folder as it is). Its F32 export against
#   `quantscope-cli generate` on that Hugging Face folder (exact), and the engine's int8 per
#   group of 32 as Q8_0 (every linear of this model has 64 or 96 inputs; routers and shared-expert
#   gates stay F32) against `generate` on the same .gguf, as the Q8_0 cases above.
# - KV cache: llama.cpp's default is F16 (K and V rounded to 11 bits); the check uses F32, the
#   engine's precision, and no flash attention. LLAMA_KV_TYPE=F16 runs the same check with the
#   default cache (measured in docs/exporters.md).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
cli=$build/bin/quantscope-cli
shared=${QS_SHARED_DIR:-../shared}
model=$shared/models/stories260K
reference_gguf=$shared/models/stories260K-gguf/stories260K.gguf
prompts=("Once upon a time" "The little dog" "Tom and Sue")
max_new=40
for f in "$cli" "$model/model.safetensors" "$reference_gguf"; do
  if [ ! -e "$f" ]; then
    echo "check-gguf: $f is missing (set QS_SHARED_DIR or build first)" >&2
    exit 1
  fi
done

source scripts/install-node-llama-cpp.sh

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Quantscope converts each .gguf it opens into a checkpoint under $XDG_CACHE_HOME; keep those
# conversions of temporary files inside $tmp.
qs() { XDG_CACHE_HOME=$tmp/cache "$cli" "$@"; }

echo '{"format": "quantscope-recipe", "version": 1}' > "$tmp/fp32.json"
cat > "$tmp/int8_g32.json" <<'EOF'
{"format": "quantscope-recipe", "version": 1,
 "global": {"weight": {"dtype": "int8", "qscheme": "per_group", "ch_axis": 1,
                       "is_dynamic": false, "symmetric": true, "round_method": "half_even",
                       "scale_type": "float", "observer_cls": "PerGroupMinMaxObserver",
                       "group_size": 32},
            "input_tensors": null, "output_tensors": null, "bias": null}}
EOF
# export LABEL GGUF_TYPE QUANT_ARGS...: writes $tmp/LABEL.gguf (named after the label, so that
# Quantscope's conversion folder is too).
export_gguf() {
  local label=$1 type=$2; shift 2
  qs quantize "${source_model:-$model}" "$@" --format gguf --gguf-type "$type" --out "$tmp/$label" --quiet > /dev/null
  mv "$tmp/$label/model.gguf" "$tmp/$label.gguf"
}
export_gguf f32 f32 --recipe "$tmp/fp32.json"
export_gguf q8_0-ggml q8_0 --recipe "$tmp/fp32.json"
export_gguf q4_0-ggml q4_0 --recipe "$tmp/fp32.json"
export_gguf q8_0-int8_g32 q8_0 --recipe "$tmp/int8_g32.json" --exclude-layers '*down_proj'
export_gguf q4_0-int4_wo_32 q4_0 --quant-scheme int4_wo_32 --exclude-layers '*down_proj'
moe_model=$tmp/qwen2_moe
python3 scripts/make-qwen2moe-allmoe.py "$shared/models/tiny-families/qwen2_moe" "$moe_model"
source_model=$moe_model export_gguf qwen2_moe-f32 f32 --recipe "$tmp/fp32.json"
source_model=$moe_model export_gguf qwen2_moe-q8_0-int8_g32 q8_0 --recipe "$tmp/int8_g32.json"

# Quantscope's side: generate --json per (weights, prompt), one line each.
generate() { qs generate "$1" --prompt "$2" --max-new-tokens $max_new --threads 1 --json 2> /dev/null; }
for i in "${!prompts[@]}"; do
  generate "$model" "${prompts[$i]}" > "$tmp/hf.$i.json"
  for label in q8_0-ggml q4_0-ggml q8_0-int8_g32 q4_0-int4_wo_32 qwen2_moe-q8_0-int8_g32; do
    generate "$tmp/$label.gguf" "${prompts[$i]}" > "$tmp/$label.$i.json"
  done
  generate "$moe_model" "${prompts[$i]}" > "$tmp/moe-hf.$i.json"
done

# The cases for check-gguf.mjs: (label, llama.cpp's file, mode, Quantscope's JSON, reference dir).
cases=()
for i in "${!prompts[@]}"; do
  cases+=("stories260K.gguf (llama.cpp's)|$reference_gguf|exact|$tmp/hf.$i.json|$model|$i")
done
for i in "${!prompts[@]}"; do
  cases+=("f32|$tmp/f32.gguf|exact|$tmp/hf.$i.json|$model|$i")
done
for i in "${!prompts[@]}"; do
  cases+=("qwen2_moe-f32|$tmp/qwen2_moe-f32.gguf|exact|$tmp/moe-hf.$i.json|$moe_model|$i")
done
for label in q8_0-ggml q4_0-ggml q8_0-int8_g32 q4_0-int4_wo_32 qwen2_moe-q8_0-int8_g32; do
  converted=$(find "$tmp/cache" -mindepth 3 -maxdepth 3 -type d -name "$label-*")
  if [ ! -f "$converted/config.json" ]; then
    echo "check-gguf: no checkpoint converted from $label.gguf under $tmp/cache" >&2
    exit 1
  fi
  for i in "${!prompts[@]}"; do
    cases+=("$label|$tmp/$label.gguf|quantized|$tmp/$label.$i.json|$converted|$i")
  done
done
printf '%s\n' "${cases[@]}" | node -e '
  const fs = require("fs");
  const [maxNew, ...prompts] = process.argv.slice(1);
  const cases = fs.readFileSync(0, "utf8").trim().split("\n").map((line) => {
    const [label, file, mode, qsFile, referenceDir, i] = line.split("|");
    return {label, file, mode, reference_dir: referenceDir, prompt: prompts[Number(i)],
            quantscope: JSON.parse(fs.readFileSync(qsFile, "utf8"))};
  });
  console.log(JSON.stringify({max_new_tokens: Number(maxNew), cases}));
' $max_new "${prompts[@]}" > "$tmp/cases.json"
node scripts/check-gguf.mjs "$tmp/cases.json"
