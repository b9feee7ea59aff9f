#!/usr/bin/env bash
# test-bench-cli.sh VFGX - issue #44: a benchmark refuses what it cannot do
# before it runs: an --out it cannot write (every benchmark, one line, exit
# 1, nothing measured; gpu and e2e in a build without CUDA say that, exit
# 77), bench eba without the RDMA device (one line, exit 1, no results
# file), as bench rdma does; bench dpdk takes the --seconds its help allows
# and no other.
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

mapfile -t benches < <("$vfgx" completion list | awk '$1 == "bench" && $2 !~ /^--/ {print $2}')
((${#benches[@]} >= 5)) || fail "vfgx completion list names ${#benches[@]} benchmarks"
for b in "${benches[@]}"; do
	args=(bench "$b" --out /dev/null/x)
	[ "$b" = rdma ] && args+=(--report --ip 127.0.0.1)
	[[ "$("$vfgx" bench "$b" --help)" == *--out* ]] || continue
	want=1
	# a build without CUDA says so once the options are read, before --out
	[[ "$b" =~ ^(gpu|e2e)$ ]] && [[ "$("$vfgx" bench "$b" --out /dev/null/x 2>&1)" == *"has no CUDA"* ]] && want=77
	refused "$want" "bench $b --out /dev/null/x" "${args[@]}"
	[ "$want" = 77 ] && continue
	grep -q "/dev/null/x" "$tmp/err" || fail "bench $b: the error does not name the --out: $(cat "$tmp/err")"
done

refused 1 "bench eba without the RDMA device" bench eba --dev vfgx-no-such-rdma0 --out "$tmp/eba"
[ -e "$tmp/eba/eba.md" ] && fail "bench eba without the device wrote eba.md"

# bench dpdk: --seconds' range is what a run can measure (testpmd's samples
# come one a second), and its low end runs
if [[ " ${benches[*]} " == *" dpdk "* ]]; then
	refused 2 "bench dpdk --seconds 0.5" bench dpdk --seconds 0.5 --out "$tmp/dpdk"
	if ((EUID == 0)) && command -v dpdk-testpmd >/dev/null; then
		if ! timeout 120 "$vfgx" bench dpdk --seconds 1 --rounds 1 --no-veth --out "$tmp/dpdk" >"$tmp/dpdk.log" 2>&1 ||
			! grep -q "^target: dpdk_net_null_rx_mpps_vs_testpmd " "$tmp/dpdk/dpdk.md"; then
			fail "bench dpdk --seconds 1: $(tail -3 "$tmp/dpdk.log")"
		fi
	else
		echo "SKIP: bench dpdk --seconds 1: needs root and dpdk-testpmd"
	fi
fi

[ "$fails" = 0 ] && echo "bench-cli: ${#benches[@]} benchmarks refuse a bad --out at once; eba without its device too; dpdk's --seconds range holds"
exit $((fails > 0))
