#!/usr/bin/env bash
# Prints the folder of a pip PyTorch package (`.../site-packages/torch`) whose LibTorch the `pip`
# preset builds against (cmake/TorchWheel.cmake):
#   1. $QS_TORCH_WHEEL when set;
#   2. else the torch 2.x that ${QS_PYTHON:-python3} imports (a GPU machine's CUDA PyTorch);
#   3. else PyPI's torch wheel, fetched once into ${XDG_CACHE_HOME:-~/.cache}/quantscope/ and
#      unpacked there with the two CUDA runtime packages its CPU library needs at load time
#      (libcudart, libcupti). PyPI has no CPU-only wheel for Linux; this unpacks only the CPU
#      libraries of the CUDA wheel (about 0.5 GB), so that build reports "CUDA no".
set -euo pipefail
version=2.15.0      # the PyPI wheel fetched when no PyTorch is installed
cuda_runtime=13.2.86 # the nvidia-cuda-runtime / nvidia-cuda-cupti its libtorch_cpu was built with
if [ -n "${QS_TORCH_WHEEL:-}" ]; then
  echo "$QS_TORCH_WHEEL"
  exit 0
fi
py=${QS_PYTHON:-python3}
found=$("$py" - 2>/dev/null <<'EOF' || true
import os, torch
if int(torch.__version__.split(".")[0]) >= 2:
    print(os.path.dirname(torch.__file__))
EOF
)
if [ -n "$found" ] && [ -f "$found/lib/libtorch_cpu.so" ]; then
  echo "$found"
  exit 0
fi
cache=${XDG_CACHE_HOME:-$HOME/.cache}/quantscope/torch-wheel-$version
site=$cache/site-packages
if [ ! -f "$site/.complete" ]; then
  mkdir -p "$cache/download"
  echo "torch-wheel: fetching torch $version from PyPI into $cache (once)" >&2
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
    -d "$cache/download" "torch==$version" "nvidia-cuda-runtime==$cuda_runtime" \
    "nvidia-cuda-cupti==$cuda_runtime" >&2
  rm -rf "$site"
  # Only what a C++ build links: headers, CMake files and the CPU libraries, not libtorch_cuda.
  python3 - "$cache/download" "$site" <<'EOF'
import pathlib, sys, zipfile
src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
# Not the wheel's own libgomp: the system's (GCC's) is the one our OpenMP code links, and one
# libgomp.so.1 per process is what the loader keeps anyway.
keep_lib = ("libc10.so", "libtorch_cpu.so", "libcudart.so", "libcupti.so")
for wheel in sorted(src.glob("*.whl")):
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            name = info.filename
            lib = name.rsplit("/", 1)[-1]
            if name.startswith(("torch/include/", "torch/share/cmake/")) or \
               (("/lib/" in name) and lib.startswith(keep_lib)):
                z.extract(info, dst)
                if "/lib/" in name:
                    (dst / name).chmod(0o755)
EOF
  rm -rf "$cache/download"
  touch "$site/.complete"
fi
echo "$site/torch"
