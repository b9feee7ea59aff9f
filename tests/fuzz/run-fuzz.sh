#!/usr/bin/env bash
# run-fuzz.sh EXE NAME - run a libFuzzer target for FUZZ_SECONDS (default
# 30) from the checked-in seeds; any crash, leak or sanitizer report fails.
set -euo pipefail
exe=$1
name=$2
secs=${FUZZ_SECONDS:-30}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
seeds=("$root/tests/fuzz/seeds/$name")
[ "$name" = config ] && seeds+=("$root/configs")
"$exe" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	-artifact_prefix="$work/" -print_final_stats=1 "$work" "${seeds[@]}" 2>&1 | tail -25
