#!/usr/bin/env bash
# run-tests.sh BUILD SAN - the whole suite: every test in the normal build,
# the unit tests again under AddressSanitizer + UndefinedBehaviorSanitizer
# (clang), the libFuzzer targets (FUZZ_SECONDS each, default 30), and the
# unit and net tests under ThreadSanitizer (scripts/run-tsan.sh).
# Ends with one line "N passed, N failed, N skipped".
set -uo pipefail
build=${1:-build}
san=${2:-build-san}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export FUZZ_SECONDS=${FUZZ_SECONDS:-30}

echo "== tests ($build)"
meson test -C "$build" --print-errorlogs --num-processes 2

echo "== unit tests and fuzzers under ASan+UBSan ($san)"
if [ ! -f "$san/build.ninja" ]; then
	CC=clang meson setup "$san" -Db_sanitize=address,undefined -Db_lundef=false \
		-Dfuzz=true -Dcuda=disabled \
		-Dc_args='-fno-sanitize-recover=all -fno-omit-frame-pointer' >/dev/null || exit 1
fi
if ninja -C "$san" >/dev/null; then
	# two at a time, as the normal build's: each fuzzer is one libFuzzer
	# process run for FUZZ_SECONDS of wall time, so two on the 2 cores
	# each have a core, as one alone had
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		meson test -C "$san" --print-errorlogs --num-processes 2 --suite unit --suite fuzz
else
	ninja -C "$san" | tail -30
	echo "sanitizer build failed" > "$san/build-failed"
fi

scripts/run-tsan.sh "${TSAN:-build-tsan}"

python3 scripts/test-summary.py "$build" "$san" "${TSAN:-build-tsan}"
