#!/usr/bin/env bash
# Paired comparison of Quantscope and AMD Quark 0.13 over disjoint calibration sets (issue 32):
# runs scripts/quark_paired.py (see its header) and prints the tables of docs/results.md's
# "Paired comparison" section.
#   scripts/quark-paired.sh [BUILD_DIR] [SETS]     (default build/release and 0-7; needs ../shared)
# Environment: QS_SHARED_DIR (../shared), QS_QUARK_VENV (/work/venvs/quark), QS_PAIRED_TSV (the
# measurements; kept, and appended to, when given: a run stopped part-way keeps its sets and the
# tables can be printed again with quark_paired.py --report), QS_PAIRED_FLOAT64 (1: also Quark's
# Qronos on float64 statistics; the default).
set -euo pipefail
cd "$(dirname "$0")/.."
cli=$(realpath "${1:-build/release}/bin/quantscope-cli")
sets=${2:-0-7}
shared=$(realpath "${QS_SHARED_DIR:-../shared}")
python=${QS_QUARK_VENV:-/work/venvs/quark}/bin/python
[ -x "$python" ] || { echo "no Quark venv at ${python%/bin/python}: scripts/make-quark-venv.sh" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tsv=${QS_PAIRED_TSV:-$work/paired.tsv}
f64=()
[ "${QS_PAIRED_FLOAT64:-1}" = 1 ] && f64=(--float64-stats)
"$python" scripts/quark_paired.py "$shared" --cli "$cli" --tsv "$tsv" --sets "$sets" \
  --workdir "$work" "${f64[@]}" 2> "$work/log" ||
  { tail -5 "$work/log" >&2; echo "quark_paired.py failed; measured so far:" >&2; }
"$python" scripts/quark_paired.py "$shared" --tsv "$tsv" --sets "$sets" --report
