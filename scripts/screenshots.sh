#!/usr/bin/env bash
# Regenerates the PNGs in docs/screenshots/ from an existing build (builds nothing):
#   scripts/screenshots.sh BUILD_DIR [OUT_DIR]
# Runs the GUI under a virtual X server (xvfb-run, Debian package xvfb) with its --screenshot
# option, which saves the window once the page is shown and quits: the start page, the workbench
# with the built-in demo model, the demo model analyzed with an int8 recipe (--analyze) with its
# worst outlier layer selected (layer detail), the same after the recipe fix of
# docs/walkthrough.md, the layer detail after Analyze with SmoothQuant (--grab detail), and the
# recipe panel on its own (--grab recipe), the Design Recipe dock after a search (--design), and
# the Evaluation panel after Evaluate with the fixed recipe (--grab evaluation).
# Settings and the demo model go to a temporary home, so the user's own are neither used nor
# changed and every run starts from the default 1400x900 layout (the whole screen where it is
# smaller).
#   QS_SCREEN=WxH (default 1600x1000): the virtual screen; QS_SCALE=F (default 1): the device
#   pixel ratio (QT_SCALE_FACTOR). Issue 28's three: 1366x768, 1920x1080, 2560x1440 with 2.
set -euo pipefail
screen_size=${QS_SCREEN:-1600x1000}
scale=${QS_SCALE:-1}

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 BUILD_DIR [OUT_DIR]" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd)
repo_dir=$(cd "$(dirname "$0")/.." && pwd)
out_dir=${2:-"$repo_dir/docs/screenshots"}
gui="$build_dir/bin/quantscope"

if [ ! -x "$gui" ]; then
  echo "screenshots: $gui not found; build it first: ninja -C $build_dir quantscope" >&2
  exit 1
fi
if ! command -v xvfb-run >/dev/null; then
  echo "screenshots: xvfb-run not found (apt-get install xvfb xauth)" >&2
  exit 1
fi

home=$(mktemp -d "${TMPDIR:-/tmp}/quantscope-screenshots.XXXXXX")
trap 'rm -rf "$home"' EXIT
mkdir -p "$out_dir" "$home/runtime"
chmod 700 "$home/runtime"

shoot() { # NAME ARGS...: one screenshot, docs/screenshots/NAME.png
  local name=$1
  shift
  XDG_CONFIG_HOME="$home/config" XDG_DATA_HOME="$home/data" XDG_RUNTIME_DIR="$home/runtime" \
    QT_QPA_PLATFORM=xcb QT_SCALE_FACTOR="$scale" xvfb-run -a -s "-screen 0 ${screen_size}x24" \
    "$gui" "$@" --screenshot "$out_dir/$name.png"
}

# The calibration text: the shared TinyStories sample when there, else this repository's README
# (the demo model's tokenizer is byte-level, so any UTF-8 text works).
calib="$repo_dir/../shared/data/tinystories-calib.txt"
[ -f "$calib" ] || calib="$repo_dir/README.md"
calib=$(cd "$(dirname "$calib")" && pwd)/$(basename "$calib")
calibration="\"calibration\": {\"data\": \"$calib\", \"num_samples\": 16, \"seq_len\": 128, \"seed\": 0}"
# The walk-through's first recipe: int8 (static per-tensor activations) everywhere.
printf '{"format": "quantscope-recipe", "version": 1, "global": "int8", %s}\n' \
  "$calibration" >"$home/int8.json"
# Its fix (docs/walkthrough.md): per-token dynamic activations for the outlier layer.
printf '{"format": "quantscope-recipe", "version": 1, "global": "int8", %s, %s}\n' \
  '"layer_overrides": [{"pattern": "model.layers.0.mlp.gate_proj", "scheme": "w_int8_a_int8_per_token_dynamic"}]' \
  "$calibration" >"$home/fixed.json"

# SmoothQuant (alpha 0.5) and rotation on the same int8 recipe: the layer detail alone, where
# the outlier layer's input and weight ranges before and after the transform are plotted
# (docs/algorithms.md).
printf '{"format": "quantscope-recipe", "version": 1, "global": "int8", %s, %s}\n' \
  '"algorithms": [{"name": "smoothquant", "alpha": 0.5}]' "$calibration" >"$home/smoothquant.json"
printf '{"format": "quantscope-recipe", "version": 1, "global": "int8", %s, %s}\n' \
  '"algorithms": [{"name": "rotation"}]' "$calibration" >"$home/rotation.json"

shoot start-page
shoot workbench-demo --demo
shoot workbench-analyzed --demo --recipe "$home/int8.json" --analyze \
  --select model.layers.0.mlp.gate_proj
shoot workbench-fixed --demo --recipe "$home/fixed.json" --analyze \
  --select model.layers.0.mlp.gate_proj
shoot layer-detail-smoothquant --demo --recipe "$home/smoothquant.json" --analyze \
  --select model.layers.0.mlp.gate_proj --grab detail
shoot layer-detail-rotation --demo --recipe "$home/rotation.json" --analyze \
  --select model.layers.0.mlp.gate_proj --grab detail
shoot recipe-panel --demo --recipe "$home/fixed.json" --pattern '*gate_proj' --grab recipe
# The recipe search (docs/recipe-search.md) at 6 bits per weight (the demo model's 688-wide down_proj
# takes no 4-bit candidate: 5.16 is its least), its default candidates, the
# KL measured on 4 windows of the evaluation text.
eval_text="$repo_dir/../shared/data/tinystories-eval.txt"
[ -f "$eval_text" ] || eval_text="$calib"
eval_text=$(cd "$(dirname "$eval_text")" && pwd)/$(basename "$eval_text")
printf '{"format": "quantscope-recipe", "version": 1, %s, %s}\n' "$calibration" \
  "\"evaluation\": {\"data\": \"$eval_text\", \"seq_len\": 128, \"max_windows\": 4}" \
  >"$home/design.json"
shoot design-recipe --demo --recipe "$home/design.json" --design 6 --grab design
# Evaluate with the walk-through's fixed recipe (docs/walkthrough.md): the Evaluation panel alone,
# its text and windows (the recipe's), the unquantized and quantized perplexity, their
# difference and the fidelity.
printf '{"format": "quantscope-recipe", "version": 1, "global": "int8", %s, %s, %s}\n' \
  '"layer_overrides": [{"pattern": "model.layers.0.mlp.gate_proj", "scheme": "w_int8_a_int8_per_token_dynamic"}]' \
  "$calibration" "\"evaluation\": {\"data\": \"$eval_text\", \"seq_len\": 128, \"max_windows\": 4}" \
  >"$home/evaluate.json"
shoot evaluation --demo --recipe "$home/evaluate.json" --evaluate --grab evaluation
# A mixture-of-experts checkpoint written by transformers (when ../shared is there): router and
# experts in the tree, layer 0's experts collapsed, one expert's down_proj selected with the
# calibration tokens routed to it.
moe="$repo_dir/../shared/models/tiny-families/qwen3_moe"
if [ -d "$moe" ]; then
  shoot moe-qwen3 "$moe" --recipe "$home/int8.json" --analyze \
    --select model.layers.1.mlp.experts.2.down_proj
fi
echo "screenshots: written to $out_dir"
