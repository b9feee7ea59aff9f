#!/usr/bin/env bash
# dpdk-veth.sh RX_PROGRAM - DPDK over a veth pair between two namespaces
# (dk-a, dk-b; 198.18.73.0/24): a kernel UDP stream from dk-b received by a
# vfgx DPDK port in dk-a, once with net_af_packet and once with
# net_af_xdp, each checked for count, order and payload.
set -uo pipefail
prog=$1
root=$(cd "$(dirname "$0")/../../.." && pwd)
name=dk
export VETH_NET=73
count=${DPDK_VETH_COUNT:-3000}

"$root/scripts/netns-probe.sh" || exit $?

trap '"$root/scripts/netns-veth.sh" down $name' EXIT
"$root/scripts/netns-veth.sh" up $name >/dev/null || { echo "FAIL: scripts/netns-veth.sh up $name failed (its error above)"; exit 1; }
mac=$(ip -n $name-a -o link show $name-a0 | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
# AF_XDP takes every frame, ARP included: the sender needs a static entry
ip -n $name-b neigh replace 198.18.$VETH_NET.1 lladdr "$mac" dev $name-b0 nud permanent

rc=0
for pmd in af_packet af_xdp; do
	"$prog" $pmd $name-a $name-b $name-a0 198.18.$VETH_NET.1 "$count"
	r=$?
	echo "$pmd: exit $r"
	((r != 0)) && rc=1
done
exit $rc
