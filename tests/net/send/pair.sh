# shellcheck shell=bash
# pair.sh PREFIX - sourced by the two-process send tests (two-node.sh,
# txtime.sh), with root, name, A, B, IPB and VETH_NET set: a temporary
# folder $tmp (/tmp/PREFIX.XXXXXX), the pass and fail counts, the veth pair
# between namespaces $A and $B up, both gone at exit (a receiver left in
# the background, $bgpid, killed first), and permanent neighbour entries
# both ways ($IPA, and $IPB): no ARP on the wire, which a raw receiver
# would count (bad_eth) and which ETF drops (it has no launch time).
tmp=$(mktemp -d "/tmp/$1.XXXXXX")
fails=0 passes=0
bgpid=
cleanup() {
	[ -n "$bgpid" ] && kill "$bgpid" 2>/dev/null && wait "$bgpid" 2>/dev/null
	"$root/scripts/netns-veth.sh" down $name
	rm -rf "$tmp"
}
trap cleanup EXIT
"$root/scripts/netns-veth.sh" up $name >/dev/null || { echo "FAIL - scripts/netns-veth.sh up $name failed (its error above)"; exit 1; }
IPA=198.18.$VETH_NET.1
maca=$(ip -n "$A" -br link show "$A"0 | awk '{print $3}')
macb=$(ip -n "$B" -br link show "$B"0 | awk '{print $3}')
ip -n "$A" neigh replace "$IPB" lladdr "$macb" dev "$A"0 nud permanent
ip -n "$B" neigh replace "$IPA" lladdr "$maca" dev "$B"0 nud permanent

# rx_settle PORT: after the sender has exited, wait until the receiver has
# read everything queued on its sockets at PORT in $B (their Recv-Q 0 on
# two looks 0.2 s apart; 60 s at most), then 1 s more for what is still in
# flight: an emulated (TCG) receiver can be seconds behind, and what it had
# not read when interrupted would be counted nowhere
rx_settle() {
	local zero=0
	for _ in $(seq 300); do
		if ip netns exec "$B" ss -Hntua "sport = :$1" | awk '$3 > 0 { busy = 1 } END { exit busy }'; then
			((++zero >= 2)) && break
		else
			zero=0
		fi
		sleep 0.2
	done
	sleep 1
}
