#!/usr/bin/env bash
# The main job: install, build, start the Quantscope workbench. Without arguments it opens the
# built-in demo model; otherwise the arguments go to the GUI (e.g. a model folder).
#   scripts/run.sh [MODEL_DIR ...]               against Debian's LibTorch 1.13 (CPU)
#   scripts/run.sh --torch pip [MODEL_DIR ...]   against pip's LibTorch 2.x, CUDA where the
#                                                installed PyTorch has it (docs/gpu.md)
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/release
if [ "${1:-}" = "--torch" ]; then
  bash scripts/build.sh --torch "${2:-}" quantscope quantscope-cli qs_tokenizer_sentencepiece
  [ "${2:-}" = pip ] && build=build/pip
  shift 2
else
  bash scripts/build.sh
fi
if [ $# -eq 0 ]; then
  exec "$build/bin/quantscope" --demo
fi
exec "$build/bin/quantscope" "$@"
