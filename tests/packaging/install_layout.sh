#!/usr/bin/env bash
# The install rules put everything a user runs where the programs and the desktop look for it:
# `cmake --install` into a temporary prefix, then the files are checked and the installed CLI runs
# from there. (packaging/test-deb.sh goes further: a .deb in a clean Debian root, where no build
# tree exists to fall back on.)
# Usage: install_layout.sh BUILD_DIR
set -euo pipefail
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
fail() { echo "install_layout: FAIL: $*" >&2; exit 1; }
cli=$prefix/bin/quantscope-cli
[ -x "$cli" ] || fail "no bin/quantscope-cli"
[ -f "$prefix/share/quantscope/recipes/int8_wo_per_channel.json" ] || fail "no sample recipes"
"$cli" --version | grep -q "^quantscope-cli [0-9].*LibTorch" || fail "installed --version"
if grep -q '^QS_WITH_SENTENCEPIECE:BOOL=ON' "$build/CMakeCache.txt" &&
   [ -f "$build/plugins/libqs_tokenizer_sentencepiece.so" ]; then
  # TokenizerLoader looks in <bin>/../lib/quantscope/plugins.
  [ -f "$prefix/lib/quantscope/plugins/libqs_tokenizer_sentencepiece.so" ] ||
    fail "the sentencepiece plugin is not in lib/quantscope/plugins"
fi
if grep -q '^QS_BUILD_MANPAGES:BOOL=ON' "$build/CMakeCache.txt"; then
  page=$prefix/share/man/man1/quantscope-cli.1.gz
  [ -f "$page" ] || fail "no man page"
  # Every command the CLI's help lists has its section in the page. The page is read once:
  # `zcat | grep -q` under pipefail fails when grep stops reading before zcat is done.
  sections=$(zcat "$page" | grep '^\.SS ')
  for cmd in $("$cli" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p'); do
    grep -qx "\.SS $cmd" <<<"$sections" || fail "man page lacks the '$cmd' command"
  done
fi
if grep -q '^QS_BUILD_GUI:BOOL=ON' "$build/CMakeCache.txt"; then
  [ -x "$prefix/bin/quantscope" ] || fail "no bin/quantscope"
  desktop=$prefix/share/applications/quantscope.desktop
  grep -qx 'Exec=quantscope %f' "$desktop" || fail "desktop entry's Exec"
  icon=$(sed -n 's/^Icon=//p' "$desktop")
  for size in 16 32 48 64 128 256; do
    [ -f "$prefix/share/icons/hicolor/${size}x${size}/apps/$icon.png" ] || fail "no ${size}px icon"
  done
  [ -f "$prefix/share/icons/hicolor/scalable/apps/$icon.svg" ] || fail "no scalable icon"
  [ -f "$prefix/share/metainfo/quantscope.metainfo.xml" ] || fail "no metainfo"
fi
echo "install_layout: ok ($prefix)"
