#!/usr/bin/env bash
# netns-veth.sh up|down [NAME] - two network namespaces NAME-a and NAME-b
# joined by a veth pair (NAME-a0 in NAME-a, NAME-b0 in NAME-b) with
# addresses 198.18.NET.1/24 and 198.18.NET.2/24 (RFC 2544 benchmarking
# range, reachable only inside these namespaces).  NET defaults to 77;
# set VETH_NET=N to run several pairs at once.  QUEUES=N (1..64, default 1)
# gives both veth ends N tx and N rx queues.  Needs root and iproute2.
set -euo pipefail

usage() { echo "usage: $0 up|down [NAME]   (default NAME: vfgx)" >&2; exit 2; }
[ $# -ge 1 ] || usage
cmd=$1
name=${2:-vfgx}
net=${VETH_NET:-77}
queues=${QUEUES:-1}
[[ $name =~ ^[a-z0-9]{1,8}$ ]] || { echo "$0: NAME must be 1-8 lowercase letters or digits" >&2; exit 2; }
[[ $net =~ ^[0-9]+$ ]] && ((net <= 255)) || { echo "$0: VETH_NET must be 0..255" >&2; exit 2; }
[[ $queues =~ ^[0-9]+$ ]] && ((queues >= 1 && queues <= 64)) || { echo "$0: QUEUES must be 1..64" >&2; exit 2; }

down() {
	ip netns del "$name-a" 2>/dev/null || true
	ip netns del "$name-b" 2>/dev/null || true
}

case $cmd in
up)
	down
	ip netns add "$name-a"
	ip netns add "$name-b"
	if ((queues > 1)); then
		ip link add "$name-a0" numtxqueues "$queues" numrxqueues "$queues" \
			type veth peer name "$name-b0" numtxqueues "$queues" numrxqueues "$queues"
	else
		ip link add "$name-a0" type veth peer name "$name-b0"
	fi
	ip link set "$name-a0" netns "$name-a"
	ip link set "$name-b0" netns "$name-b"
	ip -n "$name-a" addr add "198.18.$net.1/24" dev "$name-a0"
	ip -n "$name-b" addr add "198.18.$net.2/24" dev "$name-b0"
	for ns in a b; do
		ip -n "$name-$ns" link set lo up
		ip -n "$name-$ns" link set "$name-${ns}0" up
	done
	echo "$name-a: $name-a0 198.18.$net.1   $name-b: $name-b0 198.18.$net.2"
	;;
down)
	down
	;;
*)
	usage
	;;
esac
