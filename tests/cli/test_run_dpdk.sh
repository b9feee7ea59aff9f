#!/usr/bin/env bash
# test_run_dpdk.sh VFGX - `vfgx run` with the DPDK configs as a newcomer
# runs them: configs/dpdk-af-xdp.yaml where its interface does not exist
# says so in one line before DPDK starts; configs/dpdk-null.yaml, whose
# all-zero frames are every one dropped, does not pass and says why.
set -uo pipefail
vfgx=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; sed 's/^/     /' "$tmp/out" | tail -15; fails=$((fails + 1)); }

# a private network namespace has only lo: dk-a0 is certainly missing
isolated() { if unshare -n true 2>/dev/null; then unshare -n "$@"; else "$@"; fi; }
isolated "$vfgx" run configs/dpdk-af-xdp.yaml --duration 1 >"$tmp/out" 2>&1
rc=$?
if ((rc == 1)) && [ "$(grep -c . "$tmp/out")" = 1 ] &&
   grep -qx "vfgx: xdp0: interface 'dk-a0' not found in this network namespace (check \`ip link\`; run vfgx inside the interface's namespace with ip netns exec)" "$tmp/out"; then
	ok "dpdk-af-xdp.yaml, interface missing: exit 1, $(cat "$tmp/out")"
else
	bad "dpdk-af-xdp.yaml, interface missing: exit $rc"
fi

((EUID == 0)) || { echo "SKIP: dpdk-null.yaml: DPDK's EAL needs root here"; exit 77; }
"$vfgx" run configs/dpdk-null.yaml --duration 0.3 -q >"$tmp/out" 2>&1
rc=$?
if ((rc == 1)) && grep -qE '^drop bad_eth +[1-9][0-9]*$' "$tmp/out" &&
   grep -qE '^  min_packets   FAILED  0 delivered, at least 1 wanted: [1-9][0-9]* received, every one dropped \(see the drop lines\)' "$tmp/out" &&
   grep -q '^result: FAILED$' "$tmp/out"; then
	ok "dpdk-null.yaml: nothing delivered, FAILED with the reason"
else
	bad "dpdk-null.yaml: exit $rc"
fi
echo "$fails failure(s)"
((fails == 0))
