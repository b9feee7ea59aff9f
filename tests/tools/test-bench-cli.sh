#!/usr/bin/env bash
# test-bench-cli.sh VFGX - issue #44: a benchmark refuses what it cannot do
# before it runs: bench eba without the RDMA device (one line, exit 1, no
# results file), as bench rdma does.
set -uo pipefail
vfgx=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# one line on stderr, nothing on stdout, exit $1, within 15 s
refused() {
	local want=$1 what=$2
	shift 2
	local t0 rc
	t0=$(date +%s)
	timeout 60 "$vfgx" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" != "$want" ]; then
		fail "$what: exit $rc, wanted $want: $(head -3 "$tmp/err")"
	elif [ "$(wc -l <"$tmp/err")" != 1 ] || [ -s "$tmp/out" ]; then
		fail "$what: wanted one line on stderr and none on stdout: $(head -3 "$tmp/err")"
	elif (($(date +%s) - t0 > 15)); then
		fail "$what: refused only after $(($(date +%s) - t0)) s"
	fi
}

refused 1 "bench eba without the RDMA device" bench eba --dev vfgx-no-such-rdma0 --out "$tmp/eba"
[ -e "$tmp/eba/eba.md" ] && fail "bench eba without the device wrote eba.md"

[ "$fails" = 0 ] && echo "bench-cli: eba without its device is refused at once"
exit $((fails > 0))
