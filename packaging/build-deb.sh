#!/usr/bin/env bash
# Builds the Debian packages (quantscope, quantscope-cli) with CPack into build/package/deb.
# A separate build folder with the install prefix /usr, without tests, and without the build-tree
# plugin fallback, so the packaged programs can only find their plugin where the package puts it.
# Objects come from ccache when the release build has compiled them already.
# Usage: packaging/build-deb.sh [BUILD_DIR]     (prints the paths of the .deb files)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/package}
bash packaging/install-deps.sh >&2
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
    -DQS_BUILD_TESTS=OFF -DQS_PLUGIN_BUILD_TREE_FALLBACK=OFF \
    -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON >&2
fi
# Only what the packages hold (not the benchmarks).
cmake --build "$build" -j"$(nproc)" --target quantscope quantscope-cli qs_tokenizer_sentencepiece \
  quantscope-man quantscope-cli-man quantscope-deb-changelog >&2
rm -rf "$build/deb"
(cd "$build" && cpack -G DEB -B "$PWD/deb" >&2)
ls "$PWD/$build"/deb/*.deb
