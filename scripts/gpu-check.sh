#!/usr/bin/env bash
# The whole GPU check, one command on a GPU machine, from the repository root (after
# scripts/gpu-prepare.sh here made .gpu/ and it was carried along):
#   bash scripts/gpu-check.sh [OUT_DIR]
# 1. unpacks .gpu/debs under /opt/qtdeb (never over /) and configures the workbench with the
#    `pip` preset against the machine's own PyTorch (CUDA);
# 2. builds the CLI and runs the evaluation benchmark first (bench/bench_gpu.py section 1: eval
#    against transformers sdpa and eager), the figure the GPU issue turns on;
# 3. builds the rest (GUI, sentencepiece plugin, the GUI and device test suites) and runs
#    `ctest -L 'gui|device'` offscreen with QS_TEST_DEVICE=cuda: the GUI suites, the GUI's
#    Analyze and Evaluate on CUDA against the CLI's (tst_gui_device), and the CPU/CUDA agreement
#    suites;
# 4. the rest of the benchmark (calibration seconds, memory by depth).
# Each stage is bounded (QS_GPU_BUILD_S, QS_GPU_EVAL_S, QS_GPU_TEST_S, QS_GPU_BENCH_S seconds; an
# eval bound of 0 skips it; QS_GPU_BENCH_SECTIONS picks the later sections) so the whole fits one
# call; a failed stage is reported and the next still runs. Logs go to
# OUT_DIR (default .gpu/out). Exit status: non-zero when the build or a test failed.
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/gpu-env.sh
source scripts/gpu-env.sh "$@"
tests=$(ctest --test-dir build/pip -N -L 'gui|device' | sed -n 's/^ *Test *#[0-9]*: //p')
if ! stage build-cli "${QS_GPU_BUILD_S:-240}" cmake --build build/pip -j"$(nproc)" --target \
    quantscope-cli qs_tokenizer_sentencepiece; then
  grep -E "error|FAILED" "$out/build-cli.log" | head -40
  exit 1
fi
build/pip/bin/quantscope-cli --version | tee -a "$out/gpu.txt"
printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$LD_LIBRARY_PATH" \
  "$PWD/build/pip/bin/quantscope-cli" > build/pip/quantscope-cli.sh
chmod +x build/pip/quantscope-cli.sh
bench() { # name seconds sections
  LD_LIBRARY_PATH=$system_path stage "$1" "$2" python3 -u bench/bench_gpu.py \
    --cli build/pip/quantscope-cli.sh --sections "$3" \
    --data "$g/shared/data/wikitext2-test.txt" --work /tmp/qs-bench-gpu ${QS_GPU_BENCH_ARGS:-}
  cat "$out/$1.log"
}
[ "${QS_GPU_EVAL_S:-120}" = 0 ] || bench bench-eval "${QS_GPU_EVAL_S:-120}" 1
# shellcheck disable=SC2086 # one target name per word
if ! stage build "${QS_GPU_BUILD_S:-240}" cmake --build build/pip -j"$(nproc)" --target \
    quantscope $tests -- -k 0; then
  grep -E "error|FAILED" "$out/build.log" | head -40
  status=1
fi
stage tests "${QS_GPU_TEST_S:-150}" ctest --test-dir build/pip -L 'gui|device' -j8 \
  --timeout 140 --output-on-failure || status=1
tail -n 30 "$out/tests.log"
grep -h "device under test\|perplexity .*mean KL\|QDEBUG\|QINFO.*cuda" build/pip/Testing/Temporary/LastTest.log 2>/dev/null | head -20
bench bench-calibration "${QS_GPU_BENCH_S:-170}" "${QS_GPU_BENCH_SECTIONS:-2,3}"
exit $status
