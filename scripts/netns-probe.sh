#!/usr/bin/env bash
# netns-probe.sh [TOOL...] - can this machine run the network-namespace
# tests?  Root, iproute2 and each TOOL named, a namespace that `ip netns
# exec` can enter (it mounts /sys: refused in some chroots and containers)
# and a veth pair moved into it.  Exit 0 silently when all work; otherwise
# print one line "SKIP: <what is missing>: <the system's own error>" and
# exit 77, the status meson counts as a skip.  Every tests/net script
# calls it first, so one missing capability reads the same everywhere.
set -uo pipefail

skip() { echo "SKIP: $*"; exit 77; }
((EUID == 0)) || skip "network namespaces need root (run the suite as root)"
for t in ip "$@"; do
	command -v "$t" >/dev/null || skip "$t not installed (scripts/install-deps.sh installs it)"
done

ns=vfgxprobe$$
va=vfgxpa$$ vb=vfgxpb$$
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
	ip link del "$va" 2>/dev/null
	ip netns del "$ns" 2>/dev/null
}
trap cleanup EXIT
first() { head -1 <<<"$1"; }

err=$(ip netns add "$ns" 2>&1) || skip "cannot create a network namespace: $(first "$err")"
err=$(ip netns exec "$ns" true 2>&1) || skip "cannot enter a network namespace (ip netns exec): $(first "$err")"
err=$(ip link add "$va" type veth peer name "$vb" 2>&1) || skip "cannot create a veth pair: $(first "$err")"
err=$(ip link set "$vb" netns "$ns" 2>&1) || skip "cannot move a veth end into a namespace: $(first "$err")"
exit 0
