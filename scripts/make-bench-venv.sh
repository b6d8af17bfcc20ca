#!/bin/sh
# Makes the Python environment bench/bench_forward.py compares against: transformers' eager
# forward on PyPI's torch, the stack a user runs (Debian's python3-torch 1.13 is not that).
# The venv lives outside the repository (about 6 GB: PyPI's Linux torch wheel is the CUDA build,
# whose CPU kernels are what the benchmark uses).
#
# usage: scripts/make-bench-venv.sh [VENV_DIR]     (default: $QS_BENCH_VENV or /work/venvs/hf)
# Re-running is cheap: an existing venv with the pinned versions is left as it is.
set -eu

venv=${1:-${QS_BENCH_VENV:-/work/venvs/hf}}
python=${PYTHON:-python3}

# Pinned: the versions issue 16 measured (transformers 5.23, torch 2.15); numpy 2.5 needs Python 3.12.
torch_pin="torch==2.15.0"
transformers_pin="transformers==5.23.0"
extra_pins="safetensors==0.8.0 tokenizers==0.23.3 numpy==2.4.6"

if [ -x "$venv/bin/python" ] &&
    "$venv/bin/python" -c 'import sys, torch, transformers
sys.exit(0 if (torch.__version__.split("+")[0], transformers.__version__) == ("2.15.0", "5.23.0") else 1)' \
        2>/dev/null; then
    echo "$venv: torch 2.15.0 and transformers 5.23.0 already there"
    exit 0
fi

mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet "$torch_pin" "$transformers_pin" $extra_pins
"$venv/bin/python" -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
