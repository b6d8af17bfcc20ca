#!/usr/bin/env bash
# Issue 26, item 3: the formats compared in their real runtimes. One recipe, int4_wo_32 (int4
# symmetric weight-only, groups of 32) with the MLP excluded, is exported by one `quantize` run
# to every format that can hold it (fake-quantized checkpoint, ONNX, GGUF, Quark hf_format), each
# runtime computes the logits of the same evaluation windows (stories260K, tinystories-eval.txt,
# the first 4 windows of 256 tokens with the ids of `quantscope-cli tokenize --data`, BOS once:
# the `eval` protocol), and each is compared with the full-precision logits as llama.cpp's
# `llama-perplexity --kl-divergence` does: per scored position (tokens 1..L-1 of each window)
# KL(fp || runtime) = sum_i p_i (log p_i - log q_i) and whether the argmax tokens agree; the
# table gives mean KL +- sqrt((mean(kl^2) - mean^2) / (n - 1)) and the share of equal argmaxes
# +- sqrt(p (1 - p) / (n - 1)) over the n = 4 x 255 positions. Exits 1 when a runtime does not
# compute the function it should (below), 2 on a usage or set-up error.
#
#   scripts/check-fidelity.sh [BUILD_DIR]   (default build/release; needs ../shared or QS_SHARED_DIR)
#
# Full precision: tests/reference/hf_reference.py ("reference forward"), the independent
# plain-PyTorch forward in fp32, on ../shared/models/stories260K. tests/core/model/
# tst_decodermodel holds Quantscope's own forward to it within 1e-5 of the largest logit on
# synthetic checkpoints of every family (a bound that test derives from fp32 rounding in long dot
# products), so either could be the reference; the independent one is used so that no row is
# compared with itself.
#
# Rows (runtime: what runs, on which file of the export):
# - Quantscope, fake-quantized: the engine's weights of the recipe (`--format fake`), run by the
#   same reference forward: the model every other format should hold.
# - onnxruntime 1.30 (npm onnxruntime-node, CPU, one thread) on model.onnx: at "basic" (the
#   graph as written: DequantizeLinear in fp32, then MatMul) and at its default "all" (blocked
#   int4 QDQ MatMuls fused into MatMulNBits, which at accuracy level 4 rounds each block of 32
#   inputs to int8 with an fp32 scale amax/127).
# - llama.cpp (npm node-llama-cpp 3.22.1, CPU, one thread, F32 KV cache, no flash attention) on
#   model.gguf (the engine's int4 codes as Q4_0, f16 block scales; the rest F32). node-llama-cpp
#   gives the raw logits of every position of a batch (controlledEvaluate, generateNext.logits:
#   the full vocabulary at temperature 0), so llama.cpp's row is measured like the others.
#   ggml's CPU matmul with a Q4_0 weight rounds its input to Q8_0 blocks first (check-gguf.sh).
# - transformers 5.23 + amd-quark 0.13 (`AutoModelForCausalLM`, fp32) on the hf_format folder,
#   when the venv of scripts/make-quark-venv.sh exists (6 GB: the test command does not make
#   it; without it the row says "not measured").
# - The reference forward on the GGUF's own weights (converted to fp32 by Quantscope's GGUF
#   reader, exact), plain and with ggml's Q8_0 input rounding emulated (hf_reference's
#   rounded_inputs), and on the fake-quantized weights with MatMulNBits' int8 rounding emulated:
#   what llama.cpp and onnxruntime at "all" should give, and how much of their KL their
#   activation rounding costs.
# Recipe: int4_wo_32 is what all four formats hold on stories260K: GGUF maps int4 symmetric per
# group of 32 to Q4_0 exactly; Quark's int4 packing needs the output features a multiple of 8
# for transformers + amd-quark to load it (gate/up have 172), and down_proj's 172 inputs are no
# multiple of 32; the MLP is therefore excluded (it stays fp32 in every file).
#
# What must hold (exit 1 otherwise; the table's check column and the lines below it say it per
# row), with delta the largest logit difference (up to a constant, which softmax ignores) that
# the arithmetic allows:
# - A row computing the same function as row S: its logits within delta of S's at every
#   position. Then, by the mean value theorem on f(e) = log sum_j q_j e^(e_j) - sum_i p_i e_i
#   (the change of KL(p || q) when q's logits move by e; grad f = softmax(z + e) - p, and
#   ||softmax(z + t e) - q||_1 <= e^(2 delta) - 1), |KL - KL_S| <= delta (||p - q_S||_1 +
#   e^(2 delta) - 1) per position and so on the mean; and its argmax can differ from S's only
#   where S's top-two margin is at most 2 delta. Both are asserted as well, so that the table's
#   figures cannot contradict the logits.
# - onnxruntime "basic" and transformers + amd-quark against the fake-quantized row: the same
#   weights (DequantizeLinear and Quark's dequantization give the engine's (q - zp) * s exactly)
#   and fp32 arithmetic in other summation orders: delta = 1e-2, the bound check-onnx.sh derives
#   for fp32 logits of this model (worst case 1.5e-2; observed 2e-5).
# - The reference on the GGUF's weights is printed, not asserted against the fake-quantized row:
#   Q4_0 stores each block scale as f16, which moves each weight by at most 2^-11 of itself
#   (q * f16(s) against q * s), and no derived bound carries that through five blocks and the
#   softmax here (a tolerance taken from the measured difference would be tuned, not derived).
#   That the file holds the engine's codes is check-gguf.sh's bit-exact check; here the row
#   shows what the f16 scales cost, and it is the base of llama.cpp's check below.
# - llama.cpp against the reference on the same weights with ggml's rounding emulated, and
#   onnxruntime "all" against the one with MatMulNBits' rounding: the emulation is not bit-exact
#   (an activation within summation noise of a rounding boundary takes the neighbouring code,
#   check-gguf.sh), so delta is the largest effect of the emulated rounding itself (emulated
#   against plain, measured on the same windows: the runtime may miss the emulation by at most
#   what the rounding moves). The KL bound that delta gives is loose, so the KL is asserted
#   statistically instead: the mean of the paired per-position differences within three of its
#   standard errors (a code flip moves a position's KL either way).
# - Every measured KL finite.
# About 16 s on 2 shared cores, 46 s with the Quark venv (importing transformers + amd-quark);
# the table is docs/exporters.md's "Fidelity in the runtimes".
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
cli=$build/bin/quantscope-cli
shared=${QS_SHARED_DIR:-../shared}
model=$shared/models/stories260K
data=$shared/data/tinystories-eval.txt
quark_venv=${QS_QUARK_VENV:-/work/venvs/quark}
L=256
W=4
scheme=int4_wo_32
excluded=('*gate_proj' '*up_proj' '*down_proj')
for f in "$cli" "$model/model.safetensors" "$data"; do
  if [ ! -e "$f" ]; then
    echo "check-fidelity: $f is missing (set QS_SHARED_DIR or build first)" >&2
    exit 2
  fi
done

source scripts/install-onnxruntime-node.sh
source scripts/install-node-llama-cpp.sh

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Quantscope converts the .gguf it opens into a checkpoint under $XDG_CACHE_HOME: keep it in $tmp.
qs() { XDG_CACHE_HOME=$tmp/cache "$cli" "$@"; }
py=/usr/bin/python3
fidelity=scripts/runtime_fidelity.py

qs tokenize "$model" --data "$data" --json > "$tmp/ids.json"
qs quantize "$model" --quant-scheme $scheme --exclude-layers "${excluded[@]}" \
  --format fake,onnx,gguf,quark --out "$tmp/export" --quiet > /dev/null
qs inspect "$tmp/export/gguf/model.gguf" > /dev/null 2>&1
gguf_weights=$(find "$tmp/cache" -mindepth 3 -maxdepth 3 -type d -name 'model-*')
if [ ! -f "$gguf_weights/config.json" ]; then
  echo "check-fidelity: no checkpoint converted from model.gguf under $tmp/cache" >&2
  exit 2
fi

# Logits, raw float32 [W, L - 1, vocab] each (scripts/runtime_fidelity.py says the layout).
args=("$tmp/ids.json" $L $W)
$py $fidelity reference "$model" "${args[@]}" "$tmp/fp.bin"
$py $fidelity reference "$tmp/export/fake" "${args[@]}" "$tmp/fake.bin"
ORT_OPT_LEVEL=basic node scripts/runtime_fidelity.mjs onnxruntime "$tmp/export/onnx/model.onnx" \
  "${args[@]}" "$tmp/ort-basic.bin" > /dev/null
ORT_OPT_LEVEL=all node scripts/runtime_fidelity.mjs onnxruntime "$tmp/export/onnx/model.onnx" \
  "${args[@]}" "$tmp/ort-all.bin" > /dev/null
node scripts/runtime_fidelity.mjs llama.cpp "$tmp/export/gguf/model.gguf" "${args[@]}" \
  "$tmp/llama.bin" > "$tmp/llama.json"
# The Q4_0 tensors of the GGUF are exactly the engine's quantized linears (auto keeps the rest
# F32), so the same names say which matmul inputs MatMulNBits rounds.
node -e 'const fs = require("fs");
  const names = JSON.parse(fs.readFileSync(process.argv[1])).q8_rounded;
  fs.writeFileSync(process.argv[2], JSON.stringify(names))' "$tmp/llama.json" "$tmp/rounded.json"
$py $fidelity reference "$gguf_weights" "${args[@]}" "$tmp/gguf-plain.bin"
$py $fidelity reference "$gguf_weights" "${args[@]}" "$tmp/gguf-ggml.bin" ggml "$tmp/rounded.json"
$py $fidelity reference "$tmp/export/fake" "${args[@]}" "$tmp/fake-mlas.bin" mlas "$tmp/rounded.json"
quark_logits=null
quark_why='"no venv at '"$quark_venv"' (scripts/make-quark-venv.sh, 6 GB; not made by the test command)"'
if [ -x "$quark_venv/bin/python" ]; then
  "$quark_venv/bin/python" $fidelity transformers "$tmp/export/quark" "${args[@]}" "$tmp/quark.bin" \
    > "$tmp/quark.log" 2>&1 || { cat "$tmp/quark.log" >&2; exit 1; }
  quark_logits="\"$tmp/quark.bin\""
fi

ref="reference forward"
cat > "$tmp/rows.json" <<EOF
{"title": "stories260K, $scheme with ${excluded[*]} excluded",
 "legend": "reference forward: tests/reference/hf_reference.py, plain PyTorch in fp32",
 "data": "$(basename "$data")", "ids": "$tmp/ids.json", "seq_len": $L, "windows": $W,
 "fp": {"runtime": "$ref, full precision", "format": "safetensors", "file": "stories260K/model.safetensors",
        "logits": "$tmp/fp.bin"},
 "rows": [
  {"key": "fake", "runtime": "Quantscope fake-quantized, $ref", "format": "fake",
   "file": "fake/model.safetensors", "logits": "$tmp/fake.bin"},
  {"key": "ort-basic", "runtime": "onnxruntime 1.30, basic", "format": "onnx", "file": "onnx/model.onnx",
   "logits": "$tmp/ort-basic.bin", "same_as": "fake", "delta": 1e-2},
  {"key": "quark", "runtime": "transformers 5.23 + amd-quark 0.13", "format": "quark (hf_format)",
   "file": "quark/model.safetensors", "logits": $quark_logits, "why": $quark_why,
   "same_as": "fake", "delta": 1e-2},
  {"key": "gguf-plain", "runtime": "$ref, GGUF's weights", "format": "gguf",
   "file": "gguf/model.gguf (Q4_0 + F32)", "logits": "$tmp/gguf-plain.bin"},
  {"key": "gguf-ggml", "runtime": "$ref, GGUF's weights + ggml's Q8_0 input rounding (emulated)",
   "format": "gguf", "file": "gguf/model.gguf", "logits": "$tmp/gguf-ggml.bin"},
  {"key": "llama", "runtime": "llama.cpp (node-llama-cpp 3.22.1)", "format": "gguf",
   "file": "gguf/model.gguf", "logits": "$tmp/llama.bin", "same_as": "gguf-ggml",
   "delta": ["gguf-ggml", "gguf-plain"], "kl": "paired"},
  {"key": "fake-mlas", "runtime": "$ref, fake-quantized + MatMulNBits' int8 input rounding (emulated)",
   "format": "fake", "file": "fake/model.safetensors", "logits": "$tmp/fake-mlas.bin"},
  {"key": "ort-all", "runtime": "onnxruntime 1.30, all (default)", "format": "onnx",
   "file": "onnx/model.onnx", "logits": "$tmp/ort-all.bin", "same_as": "fake-mlas",
   "delta": ["fake-mlas", "fake"], "kl": "paired"}
 ]}
EOF
$py $fidelity table "$tmp/rows.json"
