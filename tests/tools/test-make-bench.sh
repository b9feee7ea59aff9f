#!/usr/bin/env bash
# test-make-bench.sh BUILD - `make bench` writes its results under the build
# folder and leaves the committed bench/results/pipeline-cpu.md alone;
# BENCH_OUT names another folder.  A short run (no numbers checked).
set -uo pipefail
build=$(cd "${1:?usage: test-make-bench.sh BUILD}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
committed=$src/bench/results/pipeline-cpu.md
command -v make >/dev/null || { echo "SKIP: make not installed"; exit 77; }
tmp=$(mktemp -d)
cp "$committed" "$tmp/committed.md"
# a failing run must not leave the committed file rewritten
trap 'cp "$tmp/committed.md" "$committed"; rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; fails=$((fails + 1)); }
# -o build: the build is the one under test, not remade
run_make() { make -s -C "$src" -o build -o deps bench BUILD="$build" BENCH_ARGS="--seconds 0.05 --rounds 1 --working-set 16" "$@" >"$tmp/out" 2>&1; }

rm -f "$build/bench-results/pipeline-cpu.md"
if run_make && [ -s "$build/bench-results/pipeline-cpu.md" ] &&
   grep -q '^target: cpu_pipeline_64B_mpps_per_core ' "$build/bench-results/pipeline-cpu.md"; then
	ok "make bench wrote $build/bench-results/pipeline-cpu.md"
else
	fail "make bench: no results under the build folder"; cat "$tmp/out"
fi
if cmp -s "$committed" "$tmp/committed.md"; then ok "committed bench/results/pipeline-cpu.md untouched"; else
	fail "make bench rewrote the committed bench/results/pipeline-cpu.md"
fi
if run_make BENCH_OUT="$tmp/elsewhere" && [ -s "$tmp/elsewhere/pipeline-cpu.md" ]; then
	ok "BENCH_OUT=DIR writes there"
else
	fail "BENCH_OUT=DIR"; cat "$tmp/out"
fi
echo "test-make-bench: $fails failure(s)"
((fails == 0))
