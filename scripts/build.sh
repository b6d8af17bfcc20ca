#!/usr/bin/env bash
# Installs the Debian dependencies (once) and builds the release preset incrementally.
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/install-deps.sh
[ -f build/release/build.ninja ] || cmake --preset release
cmake --build --preset release -j"$(nproc)"
