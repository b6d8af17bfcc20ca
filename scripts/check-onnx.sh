#!/usr/bin/env bash
# onnxruntime, the consumer of `quantize --format onnx`, runs Quantscope's ONNX exports of
# stories260K and must agree with Quantscope: per scheme, the perplexity of the ONNX graph on
# tinystories-eval (windows of 256, the `eval` protocol) against `quantscope-cli eval` of the
# same recipe, and for the schemes without activation quantization also the first window's
# logits against the independent PyTorch forward (tests/reference/hf_reference.py) of the same
# export written as a fake-quantized checkpoint. Fails (exit 1) when onnxruntime disagrees.
#
#   scripts/check-onnx.sh [BUILD_DIR]    (default build/release; needs ../shared or QS_SHARED_DIR)
#
# onnxruntime-node (npm, CPU) is installed once into a cache folder outside the repository,
# ${XDG_CACHE_HOME:-~/.cache}/quantscope/onnxruntime-node-$ORT_VERSION, with
# ONNXRUNTIME_NODE_INSTALL=skip (its postinstall otherwise fetches optional GPU files).
#
# Every export first passes the ONNX project's checker (PyPI `onnx`, full_check). Then each
# export runs twice: with onnxruntime's "basic" graph optimizations (the graph as written:
# DequantizeLinear in fp32, then MatMul), asserted against Quantscope as below; and with its
# default "all", which fuses QDQ MatMuls into its integer kernels (MatMulNBits, which at its
# default accuracy level 4 rounds the activations to int8 per block, and MatMulIntegerToFloat):
# asserted within 1e-2 relative perplexity, the cost of int8 activation rounding itself on this
# model (docs/results.md: W8A8 int8 round to nearest against fp32, 0.9%). onnxruntime 1.30's "extended"
# and "all" levels rewrite fp8 QDQ into MatMulIntegerToFloat, which has no float8 kernel, and
# refuse to load the model; fp8 is therefore checked at "basic" only.
#
# Tolerances at "basic" (why these numbers):
# - fp32 and weight-only: onnxruntime and LibTorch compute the same fp32 function with other
#   summation orders. A dot product of n terms carries a relative error of at most n*u
#   (u = 2^-24); the longest chain here is 5 blocks of ~10 dependent ops over n <= 256, which
#   bounds logit errors by about 5*10*256*u*|logit| ~ 8e-4 * |logit| (|logits| < 20 here: 1.5e-2).
#   The perplexity moves at most by exp of the largest logit error twice (log-softmax is
#   2-Lipschitz in the max norm): |dNLL| <= 3e-2. These are worst-case bounds; we assert
#   max |dlogit| <= 1e-2 and |dNLL| <= 1e-3 (observed: see docs/exporters.md).
# - static activation quantization (QuantizeLinear): an activation within one rounding error
#   of a code boundary can land on the neighbouring code, a whole step; onnxruntime divides by
#   the scale where Quantscope multiplies by its reciprocal (1 ulp apart) and sums in another
#   order. docs/calibration.md measured the same effect between two BLAS builds: 4e-4 (int8) and
#   8e-4 (fp8) relative perplexity. We assert |dppl|/ppl <= 2e-3, twice the larger.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
cli=$build/bin/quantscope-cli
shared=${QS_SHARED_DIR:-../shared}
model=$shared/models/stories260K
data=$shared/data/tinystories-eval.txt
calib=(--calib-data "$shared/data/tinystories-calib.txt" --calib-seq-len 256 --num-calib-data 15)
L=256

source scripts/install-onnxruntime-node.sh

# The ONNX project's own checker (PyPI `onnx`, full check with shape inference) validates every
# file against the operator specs, independently of onnxruntime's leniency. Its venv lives
# outside the repository.
ONNX_VERSION=${ONNX_VERSION:-1.17.0}
if [ -d /work/venvs ]; then venvs=/work/venvs; else venvs=${XDG_CACHE_HOME:-$HOME/.cache}/quantscope; fi
venv=${QS_ONNX_CHECKER_VENV:-$venvs/onnx-checker-$ONNX_VERSION}
if ! "$venv/bin/python" -c "import onnx" 2> /dev/null; then
  echo "installing onnx $ONNX_VERSION into $venv"
  mkdir -p "$(dirname "$venv")"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q "onnx==$ONNX_VERSION"
fi
onnx_check() {
  "$venv/bin/python" -c 'import onnx, sys
onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)' "$1"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$cli" tokenize "$model" --data "$data" --json > "$tmp/ids.json"
node -e 'const ids = JSON.parse(require("fs").readFileSync(process.argv[1])).ids;
  console.log(ids.slice(0, Number(process.argv[2])).join(" "))' "$tmp/ids.json" $L > "$tmp/row.txt"

# The other Llama-style families the exporter writes, as small synthetic checkpoints: qwen2
# (q/k/v biases), qwen3 (per-head q/k norms), mistral (a sliding window of 16 < the window of
# 64 tokens evaluated). Evaluated on 20 windows of 64 tokens.
for arch in qwen2 qwen3 mistral; do
  "$cli" synth --arch "$arch" --preset tiny --seed 3 --out "$tmp/syn-$arch" > /dev/null
  "$cli" tokenize "$tmp/syn-$arch" --data "$data" --json > "$tmp/syn-$arch.ids.json"
done
node -e 'const fs = require("fs"), p = process.argv[1], c = JSON.parse(fs.readFileSync(p));
  c.sliding_window = 16; fs.writeFileSync(p, JSON.stringify(c, null, 2))' \
  "$tmp/syn-mistral/config.json"

# Full precision: a recipe that quantizes nothing (quantize needs a scheme or a recipe).
echo '{"format": "quantscope-recipe", "version": 1}' > "$tmp/fp32.json"
# A weight-only int8 per-channel recipe (no registry scheme is weight-only per channel).
cat > "$tmp/int8_per_channel.json" <<'EOF'
{"format": "quantscope-recipe", "version": 1,
 "global": {"weight": {"dtype": "int8", "qscheme": "per_channel", "ch_axis": 0,
                       "is_dynamic": false, "symmetric": true, "round_method": "half_even",
                       "scale_type": "float", "observer_cls": "PerChannelMinMaxObserver",
                       "group_size": null},
            "input_tensors": null, "output_tensors": null, "bias": null}}
EOF

failed=0
printf '%-20s %10s | %10s %9s %12s | %10s %9s\n' scheme quantscope "ort basic" "rel diff" "max|dlogit|" \
  "ort all" "rel diff"
# check LABEL MODE QUANT_ARGS...; MODE: logits (fp32 arithmetic: NLL and the first window's
# logits against the reference forward), nll (fp32 arithmetic, NLL only) or qdq (activation
# quantization). The model, its ids, the window and the window count: $m, $ids, $len, $maxw.
m=$model ids=$tmp/ids.json len=$L maxw=0
check() {
  local label=$1 mode=$2; shift 2
  local dir=$tmp/$label
  "$cli" quantize "$m" "$@" "${calib[@]}" --out "$dir" --format onnx --format fake --quiet \
    > /dev/null
  onnx_check "$dir/onnx/model.onnx"
  "$cli" eval "$m" "$@" "${calib[@]}" --data "$data" --eval-seq-len $len --max-windows $maxw \
    --json --quiet > "$tmp/$label.qs.json"
  local reference=""
  if [ "$mode" = logits ]; then
    /usr/bin/python3 tests/reference/hf_reference.py logits "$dir/fake" "$tmp/row.txt" \
      "$tmp/$label.logits"
    reference=$tmp/$label.logits
  fi
  MAX_WINDOWS=$maxw ORT_OPT_LEVEL=basic node scripts/check-onnx.mjs "$dir/onnx/model.onnx" \
    "$ids" $len $reference > "$tmp/$label.basic.json"
  # onnxruntime's default level fuses QDQ into integer kernels; it rejects fp8 QDQ (see above).
  if [ "$label" = fp8_static ]; then
    echo '{"refused": true}' > "$tmp/$label.all.json"
  else
    MAX_WINDOWS=$maxw ORT_OPT_LEVEL=all node scripts/check-onnx.mjs "$dir/onnx/model.onnx" \
      "$ids" $len > "$tmp/$label.all.json"
  fi
  node -e '
    const fs = require("fs");
    const [label, mode, qsFile, basicFile, allFile] = process.argv.slice(1);
    const read = (f) => JSON.parse(fs.readFileSync(f));
    const qs = read(qsFile), basic = read(basicFile), all = read(allFile);
    const rel = (o) => Math.abs(o.perplexity - qs.perplexity) / qs.perplexity;
    const d = basic.max_abs_logit_diff;
    console.log(label.padEnd(20), qs.perplexity.toFixed(6).padStart(10), "|",
                basic.perplexity.toFixed(6).padStart(10), rel(basic).toExponential(2).padStart(9),
                (d === null ? "-" : d.toExponential(2)).padStart(12), "|",
                all.refused ? "  (onnxruntime optimizer refuses fp8 QDQ)"
                            : all.perplexity.toFixed(6).padStart(10) + " " +
                              rel(all).toExponential(2).padStart(9));
    const dnll = Math.abs(basic.mean_nll - qs.mean_nll);
    const okBasic = mode === "logits" ? dnll <= 1e-3 && d !== null && d <= 1e-2
                  : mode === "nll"    ? dnll <= 1e-3
                                      : rel(basic) <= 2e-3;
    const okAll = all.refused || rel(all) <= 1e-2;
    if (!okBasic || !okAll || qs.windows !== basic.windows) {
      console.log("  FAIL: onnxruntime disagrees");
      process.exit(1);
    }
  ' "$label" "$mode" "$tmp/$label.qs.json" "$tmp/$label.basic.json" "$tmp/$label.all.json" ||
    failed=1
}

check fp32 logits --recipe "$tmp/fp32.json"
check int8_w8a8_static qdq --quant-scheme int8
check int8_per_channel_wo logits --recipe "$tmp/int8_per_channel.json"
check uint4_wo_32 logits --quant-scheme uint4_wo_32 --exclude-layers '*down_proj'
check int4_wo_32 logits --quant-scheme int4_wo_32 --exclude-layers '*down_proj'
# The weights as ONNX external data (model.onnx.data), the layout of models beyond 2 GiB.
QS_ONNX_EXTERNAL_DATA=1 check int8_external qdq --quant-scheme int8
check fp8_static qdq --quant-scheme fp8
# Algorithms that rescale the block (their norms and preceding linears change): the exporter
# must write the block's tensors, not the source's.
check int8_smoothquant qdq --quant-scheme int8 --quant-algo smoothquant
check uint4_wo_32_awq logits --quant-scheme uint4_wo_32 --exclude-layers '*down_proj' \
  --quant-algo awq
for arch in qwen2 qwen3 mistral; do
  m=$tmp/syn-$arch ids=$tmp/syn-$arch.ids.json len=64 maxw=20
  check "$arch-fp32" nll --recipe "$tmp/fp32.json"
  check "$arch-uint4_wo_32" nll --quant-scheme uint4_wo_32 --exclude-layers '*down_proj'
done
exit $failed
