#!/usr/bin/env bash
# Distributed runs on a GPU machine over NCCL, one command from the repository root (after
# scripts/gpu-prepare.sh here made .gpu/ and it was carried along):
#   bash scripts/gpu-dist-check.sh [OUT_DIR]
# Builds the CLI and the group suites against the machine's PyTorch (the `pip` preset, which
# finds NCCL's and the CUDA runtime's headers), then on GPU 0:
#   1. GPTQ uint4 per group on stories260K in one process, as a world of one joined over NCCL
#      by torchrun's variables, and under the machine's own torchrun (its agent serves the
#      store): the files must be byte-identical, and --json must name the nccl backend;
#   2. the same for an eval's perplexity;
#   3. --nproc 2 on a machine with one GPU: refused, naming GPU 1;
#   4. tst_rankgroup and tst_launchenvironment.
# Prints PASS/FAIL per check and the median seconds per block of each quantize run. Exit status:
# non-zero when a check failed.
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/gpu-env.sh
source scripts/gpu-env.sh "$@"
grep -E "NCCL" "$out/configure.log"
if ! stage build "${QS_GPU_BUILD_S:-300}" cmake --build build/pip -j"$(nproc)" --target \
    quantscope-cli tst_rankgroup tst_launchenvironment; then
  grep -E "error|FAILED" "$out/build.log" | head -40
  exit 1
fi
cli=$PWD/build/pip/bin/quantscope-cli
model=$g/shared/models/stories260K
work=/tmp/qs-dist
rm -rf "$work"
mkdir -p "$work"
verdict() { # name exit-status
  if [ "$2" = 0 ]; then echo "PASS $1"; else echo "FAIL $1"; status=1; fi
}
quantize() { # out-dir [extra args]: GPTQ uint4 per group, 4 calibration batches
  local dir=$1
  shift
  "$cli" quantize "$model" --calib-data "$g/shared/data/tinystories-eval.txt" \
    --num-calib-data 100 --seq-len 64 --quant-scheme w_uint4_per_group_asym --group-size 4 \
    --quant-algo gptq --device cuda --json --quiet --out "$dir" "$@"
}
evaluate() {
  "$cli" eval "$model" --data "$g/shared/data/tinystories-eval.txt" --eval-seq-len 256 \
    --max-windows 20 --device cuda --json --quiet --no-fidelity "$@"
}
world_of_one() { # command...: as rank 0 of 1 under torchrun's variables
  WORLD_SIZE=1 RANK=0 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29617 "$@"
}
# Same files but the recipe's time of writing; prints the backend and the median block seconds.
compare() { # name base-dir base-json other-dir other-json
  python3 - "$@" <<'PY'
import json, os, statistics, sys
name, base, base_json, other, other_json = sys.argv[1:]
def files(d):
    out = {}
    for root, _, names in os.walk(d):
        for n in names:
            p = os.path.join(root, n)
            data = open(p, "rb").read()
            if n == "quantscope_recipe.json":
                r = json.loads(data)
                r.get("provenance", {}).pop("created_at", None)
                data = json.dumps(r, sort_keys=True).encode()
            out[os.path.relpath(p, d)] = data
    return out
a, b = files(base), files(other)
same = a.keys() == b.keys() and all(a[k] == b[k] for k in a)
ja, jb = (json.load(open(f)) for f in (base_json, other_json))
print(f"{name}: {len(a)} files, {'byte-identical' if same else 'DIFFERENT: ' + str([k for k in a if a.get(k) != b.get(k)])}; "
      f"distributed={jb.get('distributed')}; median s/block {statistics.median(ja['block_seconds']):.3f} "
      f"(one process) vs {statistics.median(jb['block_seconds']):.3f}")
sys.exit(0 if same and (jb.get("distributed") or {}).get("backend") == "nccl" else 1)
PY
}

quantize "$work/one" > "$work/one.json" 2> "$out/one.err"
verdict "quantize, one process" $?
NCCL_DEBUG=INFO NCCL_DEBUG_FILE=$out/nccl1.nccl world_of_one quantize "$work/nccl1" \
  > "$work/nccl1.json" 2> "$out/nccl1.err"
verdict "quantize, world of one over NCCL (torchrun's variables)" $?
grep -h -m2 "NCCL version\|Init COMPLETE" "$out"/nccl1.nccl*
compare "files, world of one vs one process" "$work/one" "$work/one.json" "$work/nccl1" \
  "$work/nccl1.json"
verdict "same files at world size 1 over NCCL" $?
timeout 300 python3 -m torch.distributed.run --nproc-per-node 1 --no-python \
  "$cli" quantize "$model" --calib-data "$g/shared/data/tinystories-eval.txt" \
  --num-calib-data 100 --seq-len 64 --quant-scheme w_uint4_per_group_asym --group-size 4 \
  --quant-algo gptq --device cuda --json --quiet --out "$work/torchrun" \
  > "$work/torchrun.json" 2> "$out/torchrun.err"
verdict "quantize under the machine's torchrun (agent store, NCCL)" $?
tail -n 3 "$out/torchrun.err"
compare "files, torchrun vs one process" "$work/one" "$work/one.json" "$work/torchrun" \
  "$work/torchrun.json"
verdict "same files under torchrun" $?
cp "$work/one/quantscope_recipe.json" "$out/recipe-one.json"
cp "$work/torchrun/quantscope_recipe.json" "$out/recipe-torchrun.json"
diff <(python3 -m json.tool "$out/recipe-one.json") \
  <(python3 -m json.tool "$out/recipe-torchrun.json") | grep -v created_at | head -n 8

evaluate > "$work/eval-one.json" 2> "$out/eval-one.err"
world_of_one evaluate > "$work/eval-nccl1.json" 2> "$out/eval-nccl1.err"
python3 - "$work/eval-one.json" "$work/eval-nccl1.json" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
print(f"eval: mean_nll {a['mean_nll']!r} (one process) vs {b['mean_nll']!r} "
      f"({b.get('distributed')})")
sys.exit(0 if a["mean_nll"] == b["mean_nll"] and b["distributed"]["backend"] == "nccl" else 1)
PY
verdict "same eval at world size 1 over NCCL" $?

"$cli" quantize "$model" --calib-data "$g/shared/data/tinystories-eval.txt" --num-calib-data 8 \
  --seq-len 64 --quant-scheme int8 --device cuda --quiet --out "$work/two" --nproc 2 \
  > /dev/null 2> "$out/nproc2.err"
rc=$?
head -c 600 "$out/nproc2.err"
[ "$rc" != 0 ] && grep -q "GPU 1" "$out/nproc2.err" && [ ! -e "$work/two" ]
verdict "--nproc 2 on one GPU refused naming GPU 1, nothing written" $?

for t in tst_rankgroup tst_launchenvironment; do
  build/pip/tests/$t > "$out/$t.log" 2>&1
  verdict "$t ($(grep -o 'Totals.*skipped' "$out/$t.log"))" $?
done
exit $status
