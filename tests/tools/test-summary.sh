#!/usr/bin/env bash
# test-summary.sh - scripts/test-summary.py over a real meson run: a small
# project whose tests pass, fail and skip (reasons on stdout and on stderr,
# and none at all); every skip is listed with the reason it printed, every
# failure by name, and the last line counts them.
set -uo pipefail
summary=$(cd "$(dirname "$0")/../.." && pwd)/scripts/test-summary.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/meson.build" <<'M'
project('summary-check', 'c')
sh = find_program('sh')
test('passes', sh, args: ['-c', 'exit 0'])
test('fails', sh, args: ['-c', 'echo broken; exit 1'])
test('skip-stdout', sh, args: ['-c', 'echo setting up; echo "SKIP: no widget here"; exit 77'])
test('skip-stderr', sh, args: ['-c', 'echo "prog: skipped: needs root" >&2; exit 77'])
test('skip-silent', sh, args: ['-c', 'exit 77'])
test('cases-skipped', sh, args: ['-c', 'echo "SKIP: ipv6 case: no IPv6 here"; echo "[  SKIPPED ] test_gpu"; echo "[  SKIPPED ] 1 test(s), listed below:"; exit 0'])
test('case-skipped-then-fails', sh, args: ['-c', 'echo "SKIP: root case: needs root"; exit 1'])
M
meson setup "$tmp/b" "$tmp" >/dev/null || { echo "FAIL: meson setup"; exit 1; }
meson test -C "$tmp/b" >/dev/null
out=$(python3 "$summary" "$tmp/b")
rc=$?
echo "$out"
fails=0
want() { grep -qxF -- "$1" <<<"$out" || { echo "FAIL: no line '$1'"; fails=$((fails + 1)); }; }
want "skipped  $tmp/b: skip-stdout: no widget here"
want "skipped  $tmp/b: skip-stderr: needs root"
want "skipped  $tmp/b: skip-silent: (the test printed no reason)"
want "FAILED   $tmp/b: fails (FAIL)"
want "skipped  $tmp/b: cases-skipped > ipv6 case: no IPv6 here"
want "skipped  $tmp/b: cases-skipped > test_gpu: (the test printed no reason)"
want "skipped  $tmp/b: case-skipped-then-fails > root case: needs root"
# tests skipped whole (3) and cases skipped inside tests that ran (3)
[ "$(tail -1 <<<"$out")" = "2 passed, 2 failed, 6 skipped" ] || { echo "FAIL: last line"; fails=$((fails + 1)); }
((rc == 1)) || { echo "FAIL: exit $rc with a failure, want 1"; fails=$((fails + 1)); }
echo "test-summary: $fails failure(s)"
((fails == 0))
