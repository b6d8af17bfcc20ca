#!/usr/bin/env bash
# Builds the `cuda` preset (headless: core, CLI, benchmarks, non-GUI tests) against the CUDA
# LibTorch inside the Python environment's PyTorch, and checks that the CLI reports CUDA.
#   scripts/build-cuda.sh            [then: ctest --preset cuda]
# On a GPU machine without Qt or nlohmann_json (../shared/gpu/README.md), carry the `.gpu/debs`
# that ../shared/gpu/prepare.sh downloads: they are unpacked under /opt/qtdeb and used from there.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${QS_PYTHON:-python3}
QS_TORCH_PREFIX=$("$py" -c 'import torch; print(torch.utils.cmake_prefix_path)')
torch_lib=$("$py" -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
export QS_TORCH_PREFIX QS_EXTRA_PREFIX=""
libs=$torch_lib
extra=()
if [ -d .gpu/debs ] && ! pkg-config --exists Qt6Core 2>/dev/null; then
  mkdir -p /opt/qtdeb
  for f in .gpu/debs/*.deb; do dpkg -x "$f" /opt/qtdeb; done
  QS_EXTRA_PREFIX=/opt/qtdeb/usr/lib/x86_64-linux-gnu/cmake
  libs=/opt/qtdeb/usr/lib/x86_64-linux-gnu:$libs
  extra=(-DSENTENCEPIECE_INCLUDE_DIR=/opt/qtdeb/usr/include
         -DSENTENCEPIECE_LIBRARY=/opt/qtdeb/usr/lib/x86_64-linux-gnu/libsentencepiece.so)
fi
export LD_LIBRARY_PATH=$libs:${LD_LIBRARY_PATH:-}
[ -f build/cuda/build.ninja ] || cmake --preset cuda -DCMAKE_CUDA_ARCHITECTURES="${QS_CUDA_ARCH:-90}" "${extra[@]}" >/dev/null
cmake --build --preset cuda -j"$(nproc)"
version=$(build/cuda/bin/quantscope-cli --version)
echo "$version"
case "$version" in
  *"CUDA yes"*) ;;
  *) echo "build-cuda: the CLI does not report CUDA (libtorch_cuda dropped at link time?)" >&2; exit 1 ;;
esac
echo "export LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
