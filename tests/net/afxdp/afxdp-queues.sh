#!/usr/bin/env bash
# afxdp-queues.sh VFGX - multi-queue veth for AF_XDP: QUEUES=N in
# scripts/netns-veth.sh gives both ends N rx and N tx queues (bad values
# refused with one line), and `vfgx bench afxdp --queues N` runs end to end
# on such a veth (one AF_XDP socket per queue, packets received, per-queue
# table written).  Needs root; exits 77 (skip) otherwise.
set -uo pipefail
vfgx=$1
root=$(cd "$(dirname "$0")/../../.." && pwd)
name=xdq
fails=0

"$root/scripts/netns-probe.sh" ethtool || exit $?
tmp=$(mktemp -d /tmp/afxdp-queues.XXXXXX)
cleanup() {
	VETH_NET=71 "$root/scripts/netns-veth.sh" down $name
	rm -rf "$tmp"
}
trap cleanup EXIT
ok() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; fails=$((fails + 1)); }

# current channel counts: the second RX:/TX: lines of ethtool -l
cur() { ip netns exec "$1" ethtool -l "$2" | awk -v k="$3:" '$1 == k {n++; v = $2} END {print (n == 2 ? v : "?")}'; }

QUEUES=3 VETH_NET=71 "$root/scripts/netns-veth.sh" up $name >/dev/null || fail "QUEUES=3 netns-veth.sh up"
for e in a b; do
	r=$(cur $name-$e $name-${e}0 RX) t=$(cur $name-$e $name-${e}0 TX)
	if [ "$r" = 3 ] && [ "$t" = 3 ]; then ok "$name-${e}0: 3 rx and 3 tx queues"; else fail "$name-${e}0: rx $r tx $t, want 3 and 3"; fi
done
VETH_NET=71 "$root/scripts/netns-veth.sh" down $name
msg=$(QUEUES=0 "$root/scripts/netns-veth.sh" up $name 2>&1); rc=$?
if ((rc == 2)) && [ "$(echo "$msg" | wc -l)" = 1 ] && grep -q "QUEUES must be 1..64" <<<"$msg"; then
	ok "QUEUES=0 refused: $msg"
else
	fail "QUEUES=0: exit $rc, '$msg'"
fi

# the benchmark on 2 queues, briefly (no numbers checked, only that every
# receiver got packets and the per-queue table is there).  Its windows are
# 1 s: a receiver of a loaded 2-core host gets a share of the CPU, and the
# table gives Mpps to 3 decimals, so a 0.3 s window could read 0.000 for a
# receiver that got packets
if "$vfgx" bench afxdp --seconds 1 --rounds 1 --senders 2 --queues 2 --testpmd none --out "$tmp" >"$tmp/bench.log" 2>&1; then
	f=$tmp/afxdp.md
	if grep -q "created with 2 tx and 2 rx queues" "$f" &&
	   awk -F'|' '$2 == " 64 " && $3 == " 1 " && NF > 10 {found = 1; good = $4 + 0 > 0 && $5 + 0 > 0 && $6 + 0 > 0; exit} END {exit !(found && good)}' "$f" &&
	   [ "$(grep -cE '^\| (64|1024|1500) \| 0:[0-9.]+/[0-9.?]+ 1:[0-9.]+/[0-9.?]+ \| [1-9] of 2 \|$' "$f")" = 3 ]; then
		ok "bench afxdp --queues 2: afxdp, the reuseport group and one socket received packets, per-queue table written"
	else
		fail "bench afxdp --queues 2: results file"; cat "$f"
	fi
else
	fail "bench afxdp --queues 2 failed"; cat "$tmp/bench.log"
fi
ip netns list | grep -q '^xdb-' && fail "bench left its namespaces"
# --testpmd none: no advice about a testpmd nobody asked for
if grep -q 'testpmd.*not found' "$tmp/bench.log"; then fail "--testpmd none still warns: $(grep 'not found' "$tmp/bench.log")"; else
	ok "--testpmd none: no missing-testpmd warning"
fi
# a testpmd that is not there: the advice names the package that has it
"$vfgx" bench afxdp --seconds 0.1 --senders 1 --queues 1 --testpmd /nonexistent/dpdk-testpmd --out "$tmp" >"$tmp/bench2.log" 2>&1
if grep -qxF "vfgx bench afxdp: /nonexistent/dpdk-testpmd not found; measuring without it (apt install dpdk-dev, or --testpmd none)" "$tmp/bench2.log"; then
	ok "missing testpmd: the advice names dpdk-dev"
else
	fail "missing testpmd advice"; cat "$tmp/bench2.log"
fi

echo "afxdp-queues: $fails failure(s)"
((fails == 0))
