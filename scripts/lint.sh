#!/usr/bin/env bash
# lint.sh - `make lint`: the kernel driver through checkpatch.pl --no-tree -f
# --strict (taken from Debian's linux-source-6.1 package, scripts/ only,
# into .deps/).  Exits non-zero on any checkpatch error or warning.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
deps=.deps/linux-source-6.1
checkpatch=$deps/scripts/checkpatch.pl

if [ ! -x "$checkpatch" ]; then
	pkg=$(ls /usr/src/linux-source-6.1.tar.xz 2>/dev/null || true)
	if [ -z "$pkg" ]; then
		tmp=$(mktemp -d)
		trap 'rm -rf "$tmp"' EXIT
		echo "lint: fetching linux-source-6.1 for checkpatch.pl"
		(cd "$tmp" && apt-get download linux-source-6.1 >/dev/null 2>&1) || {
			echo "lint: cannot download linux-source-6.1 (apt-get update, or install it)" >&2
			exit 1
		}
		dpkg-deb --fsys-tarfile "$tmp"/linux-source-6.1_*.deb |
			tar -x -O ./usr/src/linux-source-6.1.tar.xz >"$tmp/src.tar.xz"
		pkg=$tmp/src.tar.xz
	fi
	mkdir -p .deps
	tar -xJf "$pkg" -C .deps --wildcards 'linux-source-6.1/scripts/*'
fi

status=0
files=(drivers/gpurdma_mon/gmon*.[ch] drivers/gpurdma_mon/uapi/*.h drivers/gpurdma_mon/Makefile)
echo "lint: checkpatch.pl --no-tree -f on ${#files[@]} driver files"
for f in "${files[@]}"; do
	out=$("$checkpatch" --no-tree --quiet --strict --show-types -f "$f" || true)
	if [ -n "$out" ]; then
		echo "$out"
		if grep -qE '^(ERROR|WARNING):' <<<"$out"; then
			status=1
		fi
	fi
done
((status == 0)) && echo "lint: checkpatch clean (no errors, no warnings)"
exit "$status"
