#!/bin/sh
# Makes the Python environment that runs AMD Quark 0.13 itself, for scripts/quark_rows.py (Quark's
# figures beside ours in docs/results.md) and scripts/check-quark-load.sh (our Quark exports
# loaded by transformers + amd-quark). Lives outside the repository: about 6 GB, PyPI's Linux
# torch wheel being the CUDA build. Quark's rotation imports accelerate without declaring it.
# Quark's hw_emulation extension compiles on first import (a minute or two, once).
#
# usage: scripts/make-quark-venv.sh [VENV_DIR]     (default: $QS_QUARK_VENV or /work/venvs/quark)
# Re-running is cheap: an existing venv with the pinned versions is left as it is.
set -eu

venv=${1:-${QS_QUARK_VENV:-/work/venvs/quark}}
python=${PYTHON:-python3}

# Pinned: amd-quark 0.13 on the torch/transformers of scripts/make-bench-venv.sh.
pins="amd-quark==0.13 torch==2.15.0 transformers==5.23.0 accelerate safetensors==0.8.0
      tokenizers==0.23.3 numpy==2.4.6"

check='import sys, importlib.metadata as m
sys.exit(0 if (m.version("amd-quark"), m.version("transformers")) == ("0.13", "5.23.0") else 1)'
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$check" 2>/dev/null; then
    echo "$venv: amd-quark 0.13 and transformers 5.23.0 already there"
    exit 0
fi

mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet $pins
# First import compiles hw_emulation; do it here rather than inside a timed row.
"$venv/bin/python" -c 'import quark.torch, torch, transformers, importlib.metadata as m
print("amd-quark", m.version("amd-quark"), "torch", torch.__version__, "transformers", transformers.__version__)'
