#!/usr/bin/env bash
# Builds the fuzz preset (clang++, libFuzzer, ASan/UBSan) into build/fuzz and runs every fuzz
# target for SECONDS each, then prints executions, coverage and findings per target.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     default: 60 s, every target
#   scripts/fuzz.sh 0 [TARGET...]             regression run: every seed and every input in
#                                             fuzz/regressions/<target>/ once, no fuzzing
#
# Per target: seeds (written at build time from fuzz/make_corpus.py and the shared models) in
# build/fuzz/fuzz/corpus/<name>, inputs the fuzzer found interesting in build/fuzz/fuzz/work/
# <target> (kept between runs), findings (crash-*, timeout-*, oom-*, leak-*) in
# build/fuzz/fuzz/findings/<target>/ and the log in build/fuzz/fuzz/logs/<target>.log. A finding's
# input belongs in fuzz/regressions/<target>/ once fixed, so every later run replays it.
# Every run is appended to fuzz/ledger.tsv (tracked: the build folder does not outlive a machine,
# and the per-target totals are what issue 15 asks for; LEDGER overrides the path).
# Environment: JOBS (build parallelism, default 2), NICE (default 15: the machine is shared).
# Exit status: 0 when every target built and ran without a finding, 1 otherwise.
set -u -o pipefail

cd "$(dirname "$0")/.."
seconds=${1:-60}
shift $(($# > 0 ? 1 : 0))
case $seconds in
'' | *[!0-9]*)
    echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]" >&2
    exit 2
    ;;
esac
jobs=${JOBS:-2}
nice_level=${NICE:-15}
build=build/fuzz
out=$build/fuzz
ledger=${LEDGER:-fuzz/ledger.tsv}

# target  seed-folder  max_len  dictionaries (fuzz/<name>.dict)
table=(
    "fuzz_safetensors       safetensors       4096   safetensors"
    "fuzz_config            config            4096   config files"
    "fuzz_checkpoint        checkpoint        16384  checkpoint safetensors files"
    "fuzz_model             model             16384  config safetensors files"
    "fuzz_tokenizer_json    tokenizer_json    16384  tokenizer files"
    "fuzz_vocab_merges      vocab_merges      16384  tokenizer files"
    "fuzz_tokenizer_config  tokenizer_config  16384  tokenizer config files"
    "fuzz_recipe            recipe            4096   recipe pattern files"
    "fuzz_quark_config      quark_config      8192   recipe pattern files"
    "fuzz_layer_pattern     layer_pattern     1024   pattern"
    "fuzz_gguf              gguf              16384  gguf"
    "fuzz_quark_checkpoint  quark_checkpoint  16384  quark recipe safetensors checkpoint files"
)

selected=("$@")
wanted() {
    [ ${#selected[@]} -eq 0 ] && return 0
    local t
    for t in "${selected[@]}"; do [ "$t" = "$1" ] && return 0; done
    return 1
}

for t in "${selected[@]}"; do
    if ! printf '%s\n' "${table[@]}" | grep -q "^$t "; then
        echo "fuzz.sh: unknown target '$t'" >&2
        exit 2
    fi
done

if ! command -v clang++ >/dev/null; then
    echo "fuzz.sh: clang++ not found (Debian: apt-get install clang libclang-rt-14-dev)" >&2
    exit 1
fi
if [ ! -f "$build/build.ninja" ]; then
    nice -n "$nice_level" cmake --preset fuzz >/dev/null || exit 1
fi

mkdir -p "$out/logs" "$out/dicts"
declare -A built
for row in "${table[@]}"; do
    read -r target _ <<<"$row"
    wanted "$target" || continue
    # One target at a time: a target whose sources do not compile is reported, not fatal.
    if nice -n "$nice_level" cmake --build "$build" --target "$target" -j "$jobs" \
        >"$out/logs/$target.build.log" 2>&1; then
        built[$target]=1
    else
        echo "fuzz.sh: $target did not build (see $out/logs/$target.build.log)" >&2
    fi
done

status=0
results=()
for row in "${table[@]}"; do
    read -r target seeds max_len dicts <<<"$row"
    wanted "$target" || continue
    if [ -z "${built[$target]:-}" ]; then
        results+=("$(printf '%-22s %8s %8s %10s %8s %8s  %s' "$target" - - - - - "build failed")")
        status=1
        continue
    fi
    dict=$out/dicts/$target.dict
    : >"$dict"
    for d in $dicts; do cat "fuzz/$d.dict" >>"$dict"; done
    work=$out/work/$target
    findings=$out/findings/$target
    regressions=fuzz/regressions/$target
    mkdir -p "$work" "$findings" "$out/corpus/$seeds" "$regressions"
    before=$(find "$findings" -type f | wc -l)
    log=$out/logs/$target.log
    common=(-timeout=10 -rss_limit_mb=3072 -max_len="$max_len" -dict="$dict"
            -artifact_prefix="$findings/" -print_final_stats=1)
    start=$(date +%s)
    # CPU seconds (user + system) next to wall seconds: on a shared machine the wall clock
    # overstates how long a target really fuzzed.
    if [ "$seconds" -eq 0 ]; then
        # Regression: each seed and kept input once (-runs=0 only loads and runs the corpus).
        /usr/bin/time -f '%U %S' -o "$log.cpu" nice -n "$nice_level" "$build/bin/$target" \
            "${common[@]}" -runs=0 "$out/corpus/$seeds" "$regressions" >"$log" 2>&1
    else
        /usr/bin/time -f '%U %S' -o "$log.cpu" nice -n "$nice_level" "$build/bin/$target" \
            "${common[@]}" -max_total_time="$seconds" "$work" "$out/corpus/$seeds" \
            "$regressions" >"$log" 2>&1
    fi
    rc=$?
    elapsed=$(($(date +%s) - start))
    cpu=$(awk 'END { printf "%d", $(NF-1) + $NF }' "$log.cpu" 2>/dev/null)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    found=$(($(find "$findings" -type f | wc -l) - before))
    note=ok
    if [ "$rc" -ne 0 ] || [ "$found" -gt 0 ]; then
        note="FINDING (exit $rc): $(grep -m1 -E 'ERROR:|SUMMARY:|deadly signal|timeout' "$log" |
            cut -c1-100) -> $findings"
        status=1
    fi
    results+=("$(printf '%-22s %8s %8s %10s %8s %8s  %s' "$target" "$elapsed" "${cpu:-?}" \
        "${execs:-?}" "${cov:-?}" "$found" "$note")")
    # Every run is appended to a ledger, so runs over several sessions add up per target.
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$target" "$elapsed" \
        "${cpu:-?}" "${execs:-?}" "${cov:-?}" "$found" >>"$ledger"
done

printf '\n%-22s %8s %8s %10s %8s %8s  %s\n' target seconds cpu_s executions coverage findings \
    result
printf '%s\n' "${results[@]}"
exit $status
