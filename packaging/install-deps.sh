#!/usr/bin/env bash
# Installs Quantscope's build and test dependencies from Debian's archive (Debian 12 "bookworm").
# Idempotent: packages already present are skipped, so a second run costs a dpkg query only.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  qt6-base-dev qt6-base-dev-tools libqt6opengl6-dev libgl-dev
  libqcustomplot-dev libqcustomplot2.1-qt6
  libtorch-dev nlohmann-json3-dev
  # Gloo's headers: LibTorch's c10d::ProcessGroupGloo includes them (distributed runs, core/dist).
  libgloo-dev
  libsentencepiece-dev
  # LibTorch's float matmuls go through the BLAS alternative: netlib's reference BLAS is ~30x
  # slower than OpenBLAS on the same machine (docs/pitfalls.md). The OpenMP build, selected
  # below: see select_blas.
  libopenblas0-openmp
  # Tests and tools: reference PyTorch for benchmarks, Xvfb for screenshots, clang for fuzzing.
  python3-torch python3-numpy python3-sentencepiece python3-venv
  xvfb xauth clang libclang-rt-14-dev clang-format
  # scripts/fuzz.sh reports each target's CPU seconds with GNU time.
  time
)
# onnxruntime (npm onnxruntime-node) checks the ONNX exports in the test command
# (scripts/check-onnx.sh); Debian's Node.js unless a node is installed already.
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

# Points the libblas.so.3, liblapack.so.3 and libopenblas.so.0 alternatives (LibTorch links all
# three) at OpenBLAS's OpenMP build. LibTorch's elementwise ops, its matmuls and Quantscope's own
# loops then run in one OpenMP thread team; beside the pthread build's pool of its own, one
# pool's workers spin while the other's work, and a 100M model's eval ran at ~0.8x the OpenMP
# build's speed on 2 cores (docs/performance.md, "BLAS"). Only when another BLAS is selected: a
# second run changes nothing.
select_blas() {
  local arch dir name
  arch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
  dir=/usr/lib/$arch/openblas-openmp
  for name in libblas.so.3 liblapack.so.3 libopenblas.so.0; do
    [ -e "$dir/$name" ] || continue
    if [ "$(readlink -f "/usr/lib/$arch/$name")" != "$(readlink -f "$dir/$name")" ]; then
      echo "install-deps: selecting $dir/$name for $name"
      $SUDO update-alternatives --quiet --set "$name-$arch" "$dir/$name"
    fi
  done
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
select_blas
