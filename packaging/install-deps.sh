#!/usr/bin/env bash
# Installs Quantscope's build and test dependencies from Debian's archive (Debian 12 "bookworm").
# Idempotent: packages already present are skipped, so a second run costs a dpkg query only.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  qt6-base-dev qt6-base-dev-tools libqt6opengl6-dev libgl-dev
  libqcustomplot-dev libqcustomplot2.1-qt6
  libtorch-dev nlohmann-json3-dev
  libsentencepiece-dev
  # LibTorch's float matmuls go through the BLAS alternative: netlib's reference BLAS is ~30x
  # slower than OpenBLAS on the same machine (docs/pitfalls.md).
  libopenblas0-pthread
  # Tests and tools: reference PyTorch for benchmarks, Xvfb for screenshots, clang for fuzzing.
  python3-torch python3-numpy python3-sentencepiece python3-venv
  xvfb xauth clang libclang-rt-14-dev clang-format
  # scripts/fuzz.sh reports each target's CPU seconds with GNU time.
  time
)
# onnxruntime (npm onnxruntime-node) checks the ONNX exports in the test command
# (scripts/check-onnx.sh); Debian's Node.js unless a node is installed already.
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
