#!/usr/bin/env bash
# Tests the Debian packages as a new user gets them: builds the .debs (packaging/build-deb.sh),
# checks them with lintian, makes a clean Debian 12 root with debootstrap from Debian's archive,
# installs them there with dpkg -i (apt-get -f install fetches their dependencies), and in that
# root runs quantscope-cli --version, the sentencepiece tokenizer plugin, quantscope-cli eval on
# the shared model (perplexity must equal the build tree's, digit for digit) and the GUI from its
# desktop entry under Xvfb, saving a screenshot.
#
# Needs root (debootstrap, chroot, mounts) and this machine's Debian archive (its APT sources,
# which the root copies); it takes minutes, so
# it is not part of scripts/test.sh (see the README). Nothing is installed on this machine but
# the tools it needs (debootstrap, lintian, desktop-file-utils).
# Usage: packaging/test-deb.sh            (QS_SHARED_DIR: ../shared by default)
# Output: build/package/test/ (screenshot gui.png, lintian.txt, log of each step)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
shared=${QS_SHARED_DIR:-$repo/../shared}
# The archive this machine's APT already uses (one-line or deb822 sources), unless given.
host_mirror() {
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null |
    sed -nE 's/^URIs:[[:space:]]*([^[:space:]]+).*/\1/p; s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\2/p' |
    grep -v -- '-security' | head -n1
}
mirror=${QS_DEBIAN_MIRROR:-$(host_mirror)}
[ -n "$mirror" ] || { echo "test-deb: no Debian archive in this machine's APT sources (set QS_DEBIAN_MIRROR)" >&2; exit 2; }
model=$shared/models/stories260K
data=$shared/data/tinystories-eval.txt
out=$repo/build/package/test
root=$repo/build/package/root
[ "$(id -u)" -eq 0 ] || { echo "test-deb: needs root (debootstrap, chroot)" >&2; exit 2; }
[ -f "$model/config.json" ] && [ -f "$data" ] || { echo "test-deb: no $model or $data" >&2; exit 2; }

step() { printf '\n== %s (%ss so far)\n' "$1" "$SECONDS"; }
fail() { echo "test-deb: FAIL: $*" >&2; exit 1; }
# Runs a command in the root, in its own mount and PID namespaces: /dev, /proc and /sys are
# mounted there and vanish with it, and so does any process left behind. bash stays PID 1 of the
# namespace (not exec'd into chroot, hence the "exit $?" after it): as PID 1, xvfb-run would never
# get the SIGUSR1 with which Xvfb says it is ready, and would wait for ever. Each step has 30 min.
in_root() {
  timeout --kill-after=10 1800 unshare --mount --pid --fork --kill-child bash -c '
    r=$1; shift
    mount --rbind /dev "$r/dev" && mount -t proc proc "$r/proc" && mount -t sysfs sys "$r/sys"
    chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
      DEBIAN_FRONTEND=noninteractive "$@"
    exit $?' _ "$root" "$@"
}

rm -rf "$out"
mkdir -p "$out"
exec > >(tee "$out/test-deb.log") 2>&1

step "host tools"
tools=()
for t in debootstrap lintian desktop-file-utils; do
  dpkg-query -W -f='${Status}' "$t" 2>/dev/null | grep -q "install ok installed" || tools+=("$t")
done
if [ ${#tools[@]} -gt 0 ]; then
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${tools[@]}" >/dev/null
fi

step "build the packages"
mapfile -t debs < <(bash packaging/build-deb.sh)
[ ${#debs[@]} -ge 1 ] || fail "build-deb.sh made no package"
printf '%s\n' "${debs[@]}"
for d in "${debs[@]}"; do dpkg-deb --info "$d" | sed -n '/Package:/,$p'; done

step "lintian"
# --fail-on error: warnings and notes are reported (lintian.txt) but only errors fail the test.
lintian --fail-on error --display-info "${debs[@]}" | tee "$out/lintian.txt" ||
  fail "lintian reports errors"
desktop-file-validate resources/quantscope.desktop || fail "desktop-file-validate"

step "the build tree's perplexity"
cli_build=$repo/build/package/bin/quantscope-cli
eval_args=(--data /tmp/qs/tinystories-eval.txt --seq-len 256 --json)
expected=$("$cli_build" eval "$model" --data "$data" --seq-len 256 --json |
  sed -n 's/.*"perplexity": *\([^,]*\),*/\1/p')
[ -n "$expected" ] || fail "no perplexity from $cli_build"
echo "build tree: perplexity $expected"

step "clean Debian 12 root (debootstrap from $mirror)"
if mountpoint -q "$root/proc" 2>/dev/null; then fail "$root/proc is mounted: a run is active"; fi
rm -rf "$root"
debootstrap --variant=minbase bookworm "$root" "$mirror" > "$out/debootstrap.log" 2>&1 ||
  fail "debootstrap (see $out/debootstrap.log)"
# The root fetches from the same archive as this machine: its APT sources, copied.
rm -f "$root/etc/apt/sources.list"
cp /etc/apt/sources.list "$root/etc/apt/" 2>/dev/null || true
cp /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list "$root/etc/apt/sources.list.d/" 2>/dev/null || true
cp /etc/resolv.conf "$root/etc/resolv.conf"

step "dpkg -i the packages in the root"
mkdir -p "$root/tmp/qs"
cp "${debs[@]}" "$root/tmp/qs/"
cp -r "$model" "$root/tmp/qs/stories260K"
cp "$data" "$root/tmp/qs/"
in_root apt-get update -qq
# dpkg -i leaves them unconfigured for want of their dependencies; apt-get -f install fetches
# those from Debian's archive and configures everything, as a user following the README does.
in_root sh -c 'dpkg -i /tmp/qs/*.deb' || true
in_root apt-get -f install -y -qq --no-install-recommends > "$out/apt-install.log" 2>&1 ||
  fail "apt-get -f install (see $out/apt-install.log)"
for d in "${debs[@]}"; do
  name=$(dpkg-deb -f "$d" Package)
  in_root dpkg-query -W -f='${Package} ${Version} ${Status}\n' "$name" | tee -a "$out/installed.txt"
  grep -q "^$name .* install ok installed" "$out/installed.txt" || fail "$name not installed"
done
in_root apt-get install -y -qq --no-install-recommends xvfb xauth > "$out/apt-xvfb.log" 2>&1 ||
  fail "installing xvfb in the root"

step "quantscope-cli --version"
in_root quantscope-cli --version | tee "$out/version.txt"
grep -q "^quantscope-cli [0-9]" "$out/version.txt" || fail "--version"

step "the sentencepiece plugin, found from the installed layout"
in_root quantscope-cli tokenize /tmp/qs/stories260K --text "Once upon a time" \
  --tokenizer sentencepiece --json | tee "$out/tokenize.json"
grep -q '"tokenizer": *"[^"]*tokenizer.model"' "$out/tokenize.json" ||
  fail "tokenize did not use tokenizer.model through the plugin"

step "quantscope-cli eval on the shared model"
in_root quantscope-cli eval /tmp/qs/stories260K "${eval_args[@]}" | tee "$out/eval.json"
got=$(sed -n 's/.*"perplexity": *\([^,]*\),*/\1/p' "$out/eval.json")
[ "$got" = "$expected" ] || fail "perplexity $got in the root, $expected in the build tree"
echo "perplexity equal: $got"

step "the GUI from its desktop entry under Xvfb"
desktop=$root/usr/share/applications/quantscope.desktop
[ -f "$desktop" ] || fail "no $desktop"
exec_line=$(sed -n 's/^Exec=//p' "$desktop")
command=${exec_line//%f//tmp/qs/stories260K}
echo "Exec=$exec_line -> $command --screenshot /tmp/qs/gui.png"
in_root xvfb-run -a -s "-screen 0 1400x900x24" \
  sh -c "$command --screenshot /tmp/qs/gui.png" || fail "the GUI did not start or save a picture"
cp "$root/tmp/qs/gui.png" "$out/gui.png"
echo "screenshot: $out/gui.png"

step "done"
echo "test-deb: PASS in ${SECONDS}s"
