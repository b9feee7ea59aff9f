#!/usr/bin/env bash
# test_discovery.sh VFGX INJECT - exposed-buffer discovery between two
# network namespaces joined by veth (eb-a, eb-b, VETH_NET 74): both peers
# find each other; malformed, truncated, wrong-magic and wrong-version
# frames are counted and dropped; an expired lease removes a peer; a flood
# of forged node ids with the longest lease, from one MAC or from many,
# does not keep a real peer out of the table.
set -uo pipefail
vfgx=$1
inject=$2
root=$(cd "$(dirname "$0")/../../.." && pwd)
"$root/scripts/netns-probe.sh" || exit $?
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	VETH_NET=74 "$root/scripts/netns-veth.sh" down eb
	rm -rf "$work"
}
trap cleanup EXIT
VETH_NET=74 "$root/scripts/netns-veth.sh" up eb >/dev/null || { echo "FAIL: scripts/netns-veth.sh up eb failed (its error above)"; exit 1; }
fail() { echo "FAIL: $*"; for f in "$work"/*.out; do echo "== $f"; cat "$f"; done; exit 1; }
# wait until a background discover has opened its socket
ready() { for _ in $(seq 100); do grep -q announcing "$1" && return 0; sleep 0.05; done; fail "$1: never started"; }

# 1. both peers found
ip netns exec eb-a "$vfgx" discover -i eb-a0 -n 1 -p 1 -t 10 >"$work/a1.out" 2>&1 & pa=$!
ip netns exec eb-b "$vfgx" discover -i eb-b0 -n 2 -p 1 -t 10 >"$work/b1.out" 2>&1 & pb=$!
wait $pa || fail "node 1 did not find node 2"
wait $pb || fail "node 2 did not find node 1"
grep -Eq '^2 +0 +ctrl' "$work/a1.out" || fail "node 1's table lacks node 2"
grep -Eq '^1 +0 +ctrl' "$work/b1.out" || fail "node 2's table lacks node 1"
echo "ok: both peers found"

# 2. bad frames counted and dropped; a good one after them still accepted
ip netns exec eb-b "$vfgx" discover -i eb-b0 -n 2 -t 2 >"$work/b2.out" 2>&1 & pb=$!
pids=($pb)
ready "$work/b2.out"
for k in "truncated 3" "magic 4" "version 5" "malformed 6" "valid 1"; do
	ip netns exec eb-a "$inject" eb-a0 ${k% *} ${k#* } 77 || fail "inject $k"
done
wait $pb || fail "node 2 found no peer after the injected frames"
pids=()
grep -q 'truncated=3 bad_magic=4 bad_version=5 malformed=6' "$work/b2.out" ||
	fail "bad frames not counted as 3/4/5/6"
grep -Eq 'rx=19 valid=1 ' "$work/b2.out" || fail "expected 19 frames, 1 valid"
grep -Eq '^77 +1 +rx +0x0000000000010000 0x00000077 65536 ' "$work/b2.out" ||
	fail "the valid frame's rx buffer is missing from the table"
echo "ok: bad frames counted and dropped"

# 3. a lease that runs out removes the peer
ip netns exec eb-b "$vfgx" discover -i eb-b0 -n 2 -t 4 -v >"$work/b3.out" 2>&1 & pb=$!
pids=($pb)
ready "$work/b3.out"
ip netns exec eb-a "$vfgx" discover -i eb-a0 -n 1 -t 1 -l 1 >"$work/a3.out" 2>&1
wait $pb
pids=()
grep -q 'event: added node=1 ' "$work/b3.out" || fail "node 1 never seen"
grep -q 'event: expired node=1 ' "$work/b3.out" || fail "node 1's lease did not expire"
grep -Eq '^1 +0 ' "$work/b3.out" && fail "expired node 1 still in the table"
grep -q 'peers: 0 nodes' "$work/b3.out" || fail "table not empty after expiry"
echo "ok: expired lease removed the peer"

# flood_case OUT KIND NODE B_SECS A_SECS: node 2 listens for B_SECS, the
# injector sends 300 frames of new node ids from NODE with the longest
# lease, then node 1 announces for A_SECS and must be in node 2's table
flood_case() {
	ip netns exec eb-b "$vfgx" discover -i eb-b0 -n 2 -t "$4" >"$1" 2>&1 & pb=$!
	pids=($pb)
	ready "$1"
	ip netns exec eb-a "$inject" eb-a0 "$2" 300 "$3" || fail "inject $2"
	ip netns exec eb-a "$vfgx" discover -i eb-a0 -n 1 -t "$5" >/dev/null 2>&1
	wait $pb
	pids=()
	grep -Eq '^1 +0 +ctrl' "$1" || fail "node 1 kept out by $2"
}

# 4. from one (forged) MAC: rate-limited per source
flood_case "$work/b4.out" flood-one-mac 100000 5 3
grep -Eq 'rate_limited=[1-9][0-9]* ' "$work/b4.out" || fail "the flood was not rate-limited"
echo "ok: a flood from one MAC is rate-limited; the real peer got in"

# 5. from a new MAC per frame: the table fills, the flood's entries go stale
# (never announced again) and the real peer, announcing, takes one
flood_case "$work/b5.out" flood-many-macs 200000 7 5
grep -Eq 'table_full=[1-9][0-9]* ' "$work/b5.out" || fail "a full table refused nothing"
grep -Eq 'evicted=[1-9][0-9]* ' "$work/b5.out" || fail "no stale entry was evicted"
grep -Eq '^peers: [0-9]+ nodes, 256 buffers$' "$work/b5.out" || fail "the table is not at its bound of 256"
echo "ok: a flood from many MACs fills the table only until its entries go stale"

# 6. -p beyond what the table holds is refused, one line, exit 2
"$vfgx" discover -i eb-a0 -p 257 >"$work/p.out" 2>&1
rc=$?
[ $rc = 2 ] || fail "discover -p 257: exit $rc"
grep -q "^vfgx discover: -p: 257 is out of range (must be 0..256)$" "$work/p.out" || fail "discover -p 257: $(cat "$work/p.out")"
echo "ok: discover -p refuses more peers than the table holds"

# 7. --json (long options): one document with the peer table and counters
ip netns exec eb-a "$vfgx" discover --iface eb-a0 --node 1 --peers 1 --time 10 --json >"$work/a4.json" 2>"$work/a4.err" & pa=$!
ip netns exec eb-b "$vfgx" discover --iface eb-b0 --node 2 --peers 1 --time 10 >"$work/b4.out" 2>&1 & pb=$!
pids=($pa $pb)
wait $pa || fail "--json: node 1 did not find node 2"
wait $pb || fail "--json: node 2 did not find node 1"
pids=()
python3 - "$work/a4.json" <<'PY' || fail "--json document: $(cat "$work/a4.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "vfgx.discover/1", d["schema"]
assert d["node"] == 1 and d["interface"] == "eb-a0" and d["nodes"] >= 1
assert any(p["node"] == 2 and p["type"] == "ctrl" for p in d["peers"]), d["peers"]
assert d["frames"]["rx_valid"] >= 1 and d["frames"]["tx_frames"] >= 1, d["frames"]
PY
echo "ok: --json peer table"
