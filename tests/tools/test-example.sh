#!/usr/bin/env bash
# test-example.sh BUILD - examples/embed as a user builds it: `meson install
# --destdir` into a temporary root, the example compiled with nothing but
# `pkg-config --cflags --libs vfgx` against the installed headers and
# libvfgx.so.2, then run on the CPU engine (and on the GPU engine where
# nvidia-smi finds a GPU).
set -uo pipefail
build=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
for tool in pkg-config cc readelf; do
	command -v "$tool" >/dev/null || { echo "test-example: skipped: $tool not installed"; exit 77; }
done
tmp=$(mktemp -d /tmp/vfgx-example-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }

meson install -C "$build" --destdir "$tmp/root" --no-rebuild --quiet >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log"; echo "FAIL: meson install --destdir"; exit 1; }
pc=$(find "$tmp/root" -name vfgx.pc | head -1)
lib=$(find "$tmp/root" -name 'libvfgx.so.2' | head -1)
if [ -z "$pc" ] || [ -z "$lib" ]; then
	echo "FAIL: no vfgx.pc or libvfgx.so.2 installed"; exit 1
fi
export PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR=$tmp/root
PKG_CONFIG_PATH=$(dirname "$pc")
flags=$(pkg-config --cflags --libs vfgx) || { echo "FAIL: pkg-config --cflags --libs vfgx"; exit 1; }
case $flags in *"$src"*) fail "pkg-config flags point into the source tree: $flags" ;; esac

# docs/api.md shows the program in full: what is built is the block there,
# and it must be examples/embed/embed.c
awk '/^<!-- example: examples\/embed\/embed.c -->$/ { on = 1; next }
     on && /^```c$/ { body = 1; next }
     body && /^```$/ { exit }
     body { print }' "$src/docs/api.md" >"$tmp/embed.c"
[ -s "$tmp/embed.c" ] || { echo "FAIL: docs/api.md has no example block after its marker"; exit 1; }
cmp -s "$tmp/embed.c" "$src/examples/embed/embed.c" ||
	{ diff -u "$src/examples/embed/embed.c" "$tmp/embed.c"; echo "FAIL: docs/api.md's example differs from examples/embed/embed.c"; exit 1; }
# shellcheck disable=SC2086 # pkg-config output is a list of flags
if ! cc -std=c17 -Wall -Wextra -Werror "$tmp/embed.c" -o "$tmp/embed" $flags; then
	echo "FAIL: docs/api.md's example does not build against the installed library"; exit 1
fi
readelf -d "$tmp/embed" | grep -q 'NEEDED.*\[libvfgx.so.2\]' ||
	fail "embed is not linked against libvfgx.so.2"

run() { # ENGINE
	local out rc
	out=$(LD_LIBRARY_PATH=$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$tmp/embed" "$1" 2>&1)
	rc=$?
	if ((rc == 0)) && grep -q "^$1 engine: delivered 200000 of 200000 in order (0 out of order, 0 payload errors)" <<<"$out"; then
		echo "ok   embed $1: $(grep engine: <<<"$out")"
	else
		fail "embed $1: exit $rc"$'\n'"$out"
	fi
}
run cpu
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
	run gpu
else
	echo "skip embed gpu: no GPU here (nvidia-smi finds none)"
fi
exit $failed
