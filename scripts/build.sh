#!/usr/bin/env bash
# Installs the Debian dependencies (once) and builds incrementally:
#   scripts/build.sh                 the release preset, against Debian's LibTorch 1.13 (CPU)
#   scripts/build.sh --torch pip [TARGET...]
#                                    the pip preset, against pip's LibTorch 2.x: the PyTorch that
#                                    python3 imports (CUDA on a GPU machine), else PyPI's wheel
#                                    fetched once into ~/.cache (scripts/torch-wheel.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/install-deps.sh
if [ "${1:-}" = "--torch" ]; then
  case "${2:-}" in
    pip) ;;
    debian) shift 2; exec bash "$0" "$@" ;;
    *) echo "build.sh: --torch takes pip or debian" >&2; exit 2 ;;
  esac
  shift 2
  QS_TORCH_WHEEL=$(bash scripts/torch-wheel.sh)
  export QS_TORCH_WHEEL
  [ -f build/pip/build.ninja ] || cmake --preset pip >/dev/null
  targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  cmake --build --preset pip -j"$(nproc)" "${targets[@]}"
  exit 0
fi
[ -f build/release/build.ninja ] || cmake --preset release
cmake --build --preset release -j"$(nproc)"
