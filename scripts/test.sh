#!/usr/bin/env bash
# Install, build and run every test (ctest). Tests that need the real model read ../shared.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
export QT_QPA_PLATFORM=offscreen
ctest --preset release -j2 --timeout 900
