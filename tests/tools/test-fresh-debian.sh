#!/usr/bin/env bash
# test-fresh-debian.sh - scripts/fresh-debian.sh's refusals before it builds
# anything: bad options, a commit that does not exist and an existing --dir
# are one line each with exit status 2; -h prints the usage.  (The run
# itself, minutes long and from the Debian mirror, is CI's: .ci/run.)
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
script=$src/scripts/fresh-debian.sh
failed=0
fail() {
	echo "FAIL: $*"
	failed=1
}
refused() { # PATTERN ARGS...
	local pat=$1 err rc
	shift
	err=$("$script" "$@" 2>&1 >/dev/null)
	rc=$?
	[ "$rc" -eq 2 ] || fail "'$*': exit $rc, expected 2"
	[ "$(wc -l <<<"$err")" -eq 1 ] || fail "'$*': error is not one line: $err"
	grep -qE -- "$pat" <<<"$err" || fail "'$*': error lacks /$pat/: $err"
}
"$script" -h | grep -q '^usage: fresh-debian.sh \[options\]' || fail "-h prints no usage"
refused "unknown option '--bogus'" --bogus
refused "--commit needs a value" --commit
if ((EUID == 0)) && git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	refused "--commit no-such-rev: not a commit" --commit no-such-rev
	refused "--dir /tmp exists" --dir /tmp
else
	refused "needs root" --short
fi
if [ "$failed" -ne 0 ]; then
	echo "test-fresh-debian: FAILED"
	exit 1
fi
echo "test-fresh-debian: all checks passed"
