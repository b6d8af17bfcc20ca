#!/bin/sh
# Makes the Python environment that runs the other tools' recipe searches for
# bench/recipe_search_anchors.py: NVIDIA ModelOpt's auto_quantize and Intel auto-round's
# AutoScheme, on the torch and transformers of scripts/make-bench-venv.sh. Lives outside the
# repository (several GB: PyPI's Linux torch wheel is the CUDA build; the bench runs it on CPU).
#
# usage: scripts/make-anchors-venv.sh [VENV_DIR]   (default: $QS_ANCHORS_VENV or /work/venvs/anchors)
# Re-running is cheap: an existing venv with the pinned versions is left as it is.
set -eu

venv=${1:-${QS_ANCHORS_VENV:-/work/venvs/anchors}}
python=${PYTHON:-python3}

pins="nvidia-modelopt==0.47.0 auto-round==0.16.1 torch==2.15.0 transformers==5.23.0 accelerate
      safetensors==0.8.0 tokenizers==0.23.3 numpy==2.4.6"

check='import sys, importlib.metadata as m
sys.exit(0 if (m.version("nvidia-modelopt"), m.version("auto-round")) == ("0.47.0", "0.16.1") else 1)'
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$check" 2>/dev/null; then
    echo "$venv: nvidia-modelopt 0.47.0 and auto-round 0.16.1 already there"
    exit 0
fi

mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet $pins
"$venv/bin/python" -c 'import modelopt.torch.quantization, auto_round, torch, importlib.metadata as m
print("nvidia-modelopt", m.version("nvidia-modelopt"), "auto-round", m.version("auto-round"),
      "torch", torch.__version__)'
