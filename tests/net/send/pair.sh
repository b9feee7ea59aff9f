# shellcheck shell=bash
# pair.sh PREFIX - sourced by the two-process send tests (two-node.sh,
# txtime.sh), with root, name, A, B, IPB and VETH_NET set: a temporary
# folder $tmp (/tmp/PREFIX.XXXXXX), the pass and fail counts, the veth pair
# between namespaces $A and $B up, both gone at exit (a receiver left in
# the background, $bgpid, killed first), and permanent neighbour entries
# both ways ($IPA, and $IPB): no ARP on the wire, which a raw receiver
# would count (bad_eth) and which ETF drops (it has no launch time).  And
# the waits the tests use instead of time: wait_until (a condition, while
# a process runs), listening (a socket in $B), rx_settle (the receiver has
# counted what the sender sent; the receiver runs with --metrics
# $RX_METRICS).
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

# wait_until WHAT PID CMD...: until CMD succeeds (tried 0.1 s apart, 120 s
# at most) while process PID runs; else 1, with a FAIL line saying what
# was awaited and that the process ended first or the time ran out
wait_until() {
	local what=$1 pid=$2 i
	shift 2
	for ((i = 0; i < 1200; i++)); do
		"$@" && return 0
		kill -0 "$pid" 2>/dev/null || { echo "FAIL - waiting for $what: process $pid ended first"; return 1; }
		sleep 0.1
	done
	echo "FAIL - waiting for $what: not there after 120 s"
	return 1
}

# listening PROTO PORT: a socket in $B bound to PORT (u: UDP) or listening
# on it (t: TCP)
listening() { [ -n "$(ip netns exec "$B" ss -Hln"$1" "sport = :$2")" ]; }

# rx_count: what the receiver (vfgx run --metrics $RX_METRICS in $B) has
# counted on port in's rx queues: received plus dropped for a full ring.
# The page is read with bash's /dev/tcp, parsed with awk: polled in an
# emulated guest, a python3 a poll took the CPU from the receiver.
RX_METRICS=127.0.0.1:9464
rx_count() {
	# shellcheck disable=SC2016 # expanded by the inner bash
	ip netns exec "$B" bash -c 'exec 3<>"/dev/tcp/${1%:*}/${1#*:}" &&
		printf "GET /metrics HTTP/1.0\r\n\r\n" >&3 && cat <&3' rx_count "$RX_METRICS" |
		awk '/^vfgx_port_rx_packets_total[{]/ && /port="in"/ { n += $NF }
		     /^vfgx_port_drops_total[{]/ && /port="in"/ && /reason="ring_full"/ { n += $NF }
		     END { printf "%d\n", n }'
}

# rx_settle SENT_JSON: after the sender has exited, wait until the
# receiver has counted every packet the sender's report says went out
# (what the qdisc refused is not among them): a receiver under load, or
# emulated (TCG), can be seconds behind, and what it had not read when
# interrupted would be counted nowhere.  120 s at most; then one line with
# both counts (the case fails on its own accounting after).  Nothing to
# await when nothing went (every launch time refused) or the receiver has
# ended (its own report says why).
rx_settle() {
	local want got='?' i
	# the report's first "packets" key is its top-level one (vfgx send
	# --json writes it before any nested object), read by bash itself: in
	# the emulated guest a python3 start took 5 to 30 s of a 2-vCPU guest
	local report=''
	read -r -d "" report <"$1" 2>/dev/null || true
	[[ $report =~ \"packets\":\ *([0-9]+) ]] || {
		echo "  rx_settle: no sender report in $1"; return 1; }
	want=${BASH_REMATCH[1]}
	for ((i = 0; i < 400; i++)); do
		((want == 0)) && return 0
		kill -0 "$bgpid" 2>/dev/null || { echo "  rx_settle: the receiver ended before it had counted the $want packets sent"; return 1; }
		got=$(rx_count) && ((got >= want)) && return 0
		sleep 0.3
	done
	echo "  rx_settle: the receiver counted ${got:-?} of the $want packets sent (awaited up to 120 s)"
	return 1
}
