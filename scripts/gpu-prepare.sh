#!/usr/bin/env bash
# Run here, before a GPU machine is used: puts into .gpu/ (ignored by git) what such a machine
# lacks to build and test the whole workbench against its own pip PyTorch (../shared/gpu/README.md:
# it has PyTorch with CUDA, CMake, ninja and a compiler, but no Qt and no network):
#   - Debian's Qt 6 (Core, Gui, Widgets, Concurrent, Test, the offscreen platform), QCustomPlot,
#     nlohmann_json, sentencepiece and the libraries they load, as .debs (unpacked there under
#     /opt/qtdeb by scripts/gpu-check.sh, never over /);
#   - the shared models and data the GUI and device suites and the benchmark read.
# Then on the GPU machine, in one command: bash scripts/gpu-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.gpu
shared=${QS_SHARED_DIR:-../shared}
mkdir -p "$dest/debs" "$dest/shared/models" .git/info
grep -qx "/$dest/" .git/info/exclude 2>/dev/null || echo "/$dest/" >> .git/info/exclude
# Build-time packages (headers, CMake files, moc/rcc) and the run-time closure of Qt Widgets,
# QCustomPlot and the offscreen platform plugin (`ldd`), less what every Linux with a compiler
# has (glibc, libstdc++, libgcc, libgomp, zlib). Seen missing on such a machine: libglib.
debs=(
  qt6-base-dev qt6-base-dev-tools qmake6 qmake6-bin qt6-qpa-plugins
  libqt6core6 libqt6gui6 libqt6widgets6 libqt6dbus6 libqt6concurrent6 libqt6test6
  libqt6printsupport6 libqt6network6 libqt6opengl6 libqt6openglwidgets6 libqt6sql6 libqt6xml6
  libqcustomplot2.1-qt6 libqcustomplot-dev
  libicu72 libdouble-conversion3 libpcre2-16-0 libb2-1 libmd4c0 libxkbcommon0 libharfbuzz0b
  libgraphite2-3 libfreetype6 libfontconfig1 fontconfig-config fonts-dejavu-core libpng16-16
  libbrotli1 libbsd0 libmd0 libx11-6 libx11-data libxau6 libxdmcp6 libxcb1
  libegl1 libgl1 libglvnd0 libglx0 libopengl0 libgl-dev libegl-dev libglx-dev libopengl-dev
  libvulkan-dev libvulkan1
  libglib2.0-0 libpcre2-8-0 libzstd1 liblz4-1 libsystemd0 libgcrypt20 libgpg-error0 libcap2
  liblzma5 libexpat1 libdbus-1-3 libffi8
  nlohmann-json3-dev libsentencepiece0 libsentencepiece-dev
)
(cd "$dest/debs" && apt-get download "${debs[@]}" >/dev/null 2>&1) || {
  apt-get update -qq >/dev/null && (cd "$dest/debs" && apt-get download "${debs[@]}" >/dev/null); }
# What the GUI, device and benchmark runs read (tests name these paths under QS_SHARED_DIR).
rm -rf "$dest/shared"
mkdir -p "$dest/shared/models/tiny-families"
cp -r "$shared/models/stories260K" "$shared/models/stories260K-gguf" "$dest/shared/models/"
cp -r "$shared/models/tiny-families/qwen3_moe" "$shared/models/tiny-families/llama" \
  "$dest/shared/models/tiny-families/"
cp -r "$shared/data" "$dest/shared/"
du -sh "$dest"
