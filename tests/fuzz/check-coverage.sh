#!/usr/bin/env bash
# check-coverage.sh EXE SEEDS FILE - the fuzz build instruments the library
# for libFuzzer's coverage (meson.build): run EXE over its seeds once and
# fail unless libFuzzer's own coverage report (-print_coverage=1) names a
# covered function in the library's FILE (a path under src/).  Without the
# instrumentation it lists only the target's own file and what it inlines.
set -euo pipefail
exe=$1
seeds=$2
file=$3
# the report names functions and files through llvm-symbolizer; without
# it there is no COVERED_FUNC line at all, which would read as a failure
if ! command -v llvm-symbolizer >/dev/null; then
	echo "FAIL: no llvm-symbolizer on PATH (Debian: apt-get install llvm; scripts/install-deps.sh installs it)"
	exit 1
fi
out=$("$exe" -runs=0 -print_coverage=1 "$seeds" 2>&1) || {
	printf '%s\n' "$out" | tail -20
	exit 1
}
n=$(printf '%s\n' "$out" | grep -c "^COVERED_FUNC: .*/src/$file:" || true)
if [ "$n" -eq 0 ]; then
	echo "FAIL: $(basename "$exe") covers no function of src/$file: is the library built with -fsanitize=fuzzer-no-link?"
	printf '%s\n' "$out" | grep "^COVERED_FUNC" | head -10
	exit 1
fi
echo "PASS: $(basename "$exe") covers $n functions of src/$file over its seeds"
