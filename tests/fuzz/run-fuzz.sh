#!/usr/bin/env bash
# run-fuzz.sh EXE NAME - run a libFuzzer target for FUZZ_SECONDS (default
# 30) from the checked-in seeds; any crash, leak or sanitizer report fails
# and prints the failing input.
set -euo pipefail
exe=$1
name=$2
secs=${FUZZ_SECONDS:-30}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
seeds=("$root/tests/fuzz/seeds/$name")
[ "$name" = config ] && seeds+=("$root/configs")
mkdir "$work/corpus" "$work/crash"
rc=0
"$exe" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	-artifact_prefix="$work/crash/" -print_final_stats=1 "$work/corpus" "${seeds[@]}" \
	>"$work/log" 2>&1 || rc=$?
tail -40 "$work/log"
# the input that failed, so a CI log alone can reproduce it:
# base64 -d > x && EXE x
for f in "$work"/crash/*; do
	[ -f "$f" ] || continue
	echo "== failing input $(basename "$f") ($(stat -c %s "$f") bytes), base64:"
	base64 -w 100 "$f" | head -40
done
# libFuzzer's own error exit code is 77, which meson reads as "skipped":
# any failure is exit 1 here
[ "$rc" -eq 0 ] || exit 1
