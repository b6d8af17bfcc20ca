# The environment both GPU checks start from, sourced by scripts/gpu-check.sh and
# scripts/gpu-dist-check.sh on a GPU machine from the repository root (after
# scripts/gpu-prepare.sh here made .gpu/): unpacks .gpu/debs under /opt/qtdeb (never over /),
# exports what our binaries need (Debian's libraries first, for them only: $system_path keeps the
# machine's own for Python), records the machine in $out/gpu.txt, defines `stage` (a bounded,
# logged step) and configures the `pip` preset against the machine's PyTorch into build/pip.
# Sets $g, $out (the log folder: the first argument, else .gpu/out), $status (0), $q, $lib,
# $system_path.
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
