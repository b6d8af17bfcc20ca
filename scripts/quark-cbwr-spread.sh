#!/bin/sh
# Quark 0.13's own rows under each of MKL's numerical-reproducibility modes (MKL_CBWR): the same
# Python, model, windows and weights, only the float32 matrix-multiply kernel that MKL picks
# changes, as it does between CPUs and runs ("default": MKL_CBWR unset, what a user runs, where
# MKL may pick kernels by the alignment of each buffer; AUTO: this CPU's kernels, reproducible
# run to run; AVX2: what an AVX2-only CPU runs, and so on). A row that moves here moves with the machine Quark runs on: the spread is
# the reach of float32 rounding on that algorithm, the yardstick for "ours against Quark's" in
# docs/results.md. Prints one markdown table: a row per recipe, a column per mode, then min and max.
#
# usage: scripts/quark-cbwr-spread.sh SHARED_DIR [ROWS] [MODES]
#   ROWS: quark_rows.py keys, comma-separated (default: the GPTQ, GPTAQ, Qronos and AWQ rows)
#   MODES: MKL_CBWR values or "default", space-separated (default: default AUTO COMPATIBLE AVX2
#          AVX512)
# Runs with the venv of scripts/make-quark-venv.sh ($QS_QUARK_VENV, default /work/venvs/quark).
set -eu

shared=${1:?usage: quark-cbwr-spread.sh SHARED_DIR [ROWS] [MODES]}
rows=${2:-uint4_wo_32_gptq,uint4_wo_32_gptaq,uint4_wo_32_qronos,uint4_wo_32_awq,int4_wo_32_gptq,int4_wo_32_gptaq,int4_wo_32_qronos,int4_wo_32_awq}
modes=${3:-default AUTO COMPATIBLE AVX2 AVX512}
python=${QS_QUARK_VENV:-/work/venvs/quark}/bin/python
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for mode in $modes; do
    echo "MKL_CBWR=$mode ..." >&2
    # quark_rows.py prints "| label | perplexity | seconds |" per row (fp32 first).
    if [ "$mode" = default ]; then unset MKL_CBWR; else export MKL_CBWR=$mode; fi
    "$python" "$here/quark_rows.py" "$shared" --rows "$rows" 2>/dev/null |
        awk -F' [|] ' -v m="$mode" '/^\| / { print $1 "\t" m "\t" $2 }' | sed 's/^| //' \
        >>"$out/rows.tsv"
done

awk -F'\t' -v modes="$modes" '
    BEGIN { n = split(modes, mode, " ") }
    { if (!($1 in seen)) { seen[$1] = 1; order[++rows] = $1 } v[$1, $2] = $3 }
    END {
        printf "| recipe |"; for (i = 1; i <= n; ++i) printf " %s |", mode[i]; print " min | max |"
        printf "|---|"; for (i = 1; i <= n + 2; ++i) printf "---|"; print ""
        for (r = 1; r <= rows; ++r) {
            label = order[r]; lo = ""; hi = ""
            printf "| %s |", label
            for (i = 1; i <= n; ++i) {
                x = v[label, mode[i]]; printf " %s |", x
                if (x ~ /^[0-9.]+$/) {
                    if (lo == "" || x + 0 < lo + 0) lo = x
                    if (hi == "" || x + 0 > hi + 0) hi = x
                }
            }
            printf " %s | %s |\n", lo, hi
        }
    }' "$out/rows.tsv"
