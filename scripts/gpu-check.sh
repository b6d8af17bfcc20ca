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
g=$PWD/.gpu
out=${1:-$g/out}
mkdir -p "$out"
status=0
q=/opt/qtdeb
lib=$q/usr/lib/x86_64-linux-gnu
mkdir -p "$q"
for f in "$g"/debs/*.deb; do dpkg -x "$f" "$q"; done
cat > "$q/fonts.conf" <<EOF
<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig><dir>$q/usr/share/fonts</dir><dir>/usr/share/fonts</dir><cachedir>/tmp/qs-fontconfig</cachedir></fontconfig>
EOF
QS_TORCH_WHEEL=$(bash scripts/torch-wheel.sh)
export QS_TORCH_WHEEL
# Debian's libraries go first for our binaries only: Python (the benchmark's transformers) keeps
# the machine's own, through the CLI wrapper written after the build.
system_path=${LD_LIBRARY_PATH:-}
# (Debian 12 keeps some libraries, libdbus and libsystemd among them, in /lib rather than /usr/lib.)
export LD_LIBRARY_PATH=$lib:$q/lib/x86_64-linux-gnu:$QS_TORCH_WHEEL/lib:$system_path
export QT_PLUGIN_PATH=$lib/qt6/plugins QT_QPA_PLATFORM=offscreen FONTCONFIG_FILE=$q/fonts.conf
export QS_TEST_DEVICE=${QS_TEST_DEVICE:-cuda}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' | tee -a "$out/gpu.txt"
python3 -c 'import transformers; print("transformers", transformers.__version__)' 2>&1 | tail -n1 | tee -a "$out/gpu.txt"

stage() { # name seconds command...
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "== $name: exit $rc in $((SECONDS - t0)) s (log $out/$name.log)"
  return $rc
}

cmake --preset pip -DCMAKE_PREFIX_PATH="$lib/cmake;$q/usr" -DQS_SHARED_DIR="$g/shared" \
  -DSENTENCEPIECE_INCLUDE_DIR=$q/usr/include -DSENTENCEPIECE_LIBRARY=$lib/libsentencepiece.so \
  -DCMAKE_CUDA_ARCHITECTURES=90 > "$out/configure.log" 2>&1 ||
  { tail -n 40 "$out/configure.log"; exit 1; }
grep -E "LibTorch|CUDA" "$out/configure.log"
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
