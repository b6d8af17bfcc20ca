#!/usr/bin/env bash
# Install, build and run every test (ctest). Tests that need the real model read ../shared.
set -euo pipefail
cd "$(dirname "$0")/.."
# Includes only go down the floors of core/ (docs/layout.md): checked before anything is built.
bash scripts/check-layers.sh
bash scripts/build.sh
# The reference `safetensors` package (PyPI; Debian has none) lets one test compare our reader and
# writer with it. It lives in a venv over Debian's Python so it sees python3-torch; without
# network the test reports a skip instead.
venv=build/pyref
if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$venv" >/dev/null 2>&1 || true
fi
if [ -x "$venv/bin/python" ] && ! "$venv/bin/python" -c "import safetensors" 2>/dev/null; then
  "$venv/bin/python" -m pip install -q safetensors==0.4.5 >/dev/null 2>&1 || true
fi
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import safetensors" 2>/dev/null; then
  export QS_PYTHON="$PWD/$venv/bin/python"
fi
export QT_QPA_PLATFORM=offscreen
ctest --preset release -j2 --timeout 900
# The consumers of the exports, installed from the package registries into a cache folder
# outside the repository: onnxruntime (npm onnxruntime-node) runs the ONNX exports and llama.cpp
# (npm node-llama-cpp) generates from the GGUF exports; both must agree with Quantscope (they
# fail, not skip, when they do not).
bash scripts/check-onnx.sh build/release
bash scripts/check-gguf.sh build/release
bash scripts/check-gguf-tokenizers.sh build/release
# One recipe exported to every format and run in each runtime (transformers + amd-quark too when
# the venv of scripts/make-quark-venv.sh exists): KL and top-1 agreement against full precision,
# each runtime asserted to compute the function its file holds (docs/exporters.md).
bash scripts/check-fidelity.sh build/release
# Ranks launched by Slurm's srun: a one-node Slurm on localhost (started and stopped by the
# script, Debian's slurmctld, slurmd and munge installed when missing) runs examples/slurm/
# eval.sbatch with 2 tasks; the perplexity must equal one process's (about 7 s).
bash scripts/check-slurm.sh build/release/bin/quantscope-cli
# The headless configuration a GPU server builds (no Qt Widgets, no sentencepiece): it must
# configure, build and pass too. Its objects are the release build's (ccache), so this costs
# mostly links and the core suites a second time.
[ -f build/headless/build.ninja ] || cmake --preset headless >/dev/null
cmake --build --preset headless -j"$(nproc)"
ctest --preset headless -j2 --timeout 900
# The whole workbench against pip's LibTorch 2.x (the build a GPU workstation runs, docs/gpu.md),
# here against the CPU libraries of PyPI's torch wheel (fetched once into ~/.cache): the GUI,
# the CLI and the GUI suites must build and pass against it too. Other suites are the release
# build's, so only these targets are built (the wheel's headers are another object set).
QS_TORCH_WHEEL=$(bash scripts/torch-wheel.sh)
export QS_TORCH_WHEEL
[ -f build/pip/build.ninja ] || cmake --preset pip >/dev/null
gui_tests=$(ctest --preset pip -N -L gui | sed -n 's/^ *Test *#[0-9]*: //p')
# shellcheck disable=SC2086 # one target name per word
bash scripts/build.sh --torch pip quantscope quantscope-cli qs_tokenizer_sentencepiece $gui_tests
ctest --preset pip -L gui -j2 --timeout 900
