#!/usr/bin/env bash
# The main job: install, build, start the Quantscope workbench. Without arguments it opens the
# built-in demo model; otherwise the arguments go to the GUI (e.g. a model folder).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
if [ $# -eq 0 ]; then
  exec build/release/bin/quantscope --demo
fi
exec build/release/bin/quantscope "$@"
