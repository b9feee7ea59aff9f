#!/usr/bin/env bash
# two-node.sh VFGX HAVE_AFXDP HAVE_DPDK - `vfgx send` in one namespace, `vfgx run` in the other,
# joined by veth, as two processes: socket UDP, socket TCP, AF_XDP and DPDK
# (net_af_packet on the veth, built frames and replayed laps) senders, each with loss, reordering,
# duplicates and corruption injected at the sender.  The receiver checks
# its counts against the sender's --json report (--expect-sent): every
# packet accounted for exactly, or the case fails.  A backend not in this
# build is a skipped case, said on its line.  Nothing here waits for time:
# the sender starts once the receiver's socket is bound or listening (ss)
# or its AF_XDP port says it is attached, the receiver is stopped once it
# has counted every packet sent (its metrics page), and its socket buffer
# or rings hold the whole stream, so a receiver slow to start or starved
# of the CPU (a loaded 2-core host) loses nothing.
set -uo pipefail
vfgx=$1 have_afxdp=${2:-0} have_dpdk=${3:-0}
root=$(cd "$(dirname "$0")/../../.." && pwd)
name=snd
export VETH_NET=76
A=$name-a B=$name-b
IPB=198.18.$VETH_NET.2
"$root/scripts/netns-probe.sh" || exit $?
. "$root/tests/net/send/pair.sh" send-test
ip netns exec "$A" sysctl -qw net.ipv6.conf."$A"0.disable_ipv6=1
ip netns exec "$B" sysctl -qw net.ipv6.conf."$B"0.disable_ipv6=1
# AF_XDP and DPDK senders put frames on the wire as built; the receiver
# reads them raw, so the sender's checksum offload stays out of the way
ip netns exec "$A" ethtool -K "$A"0 tx off >/dev/null

faults='    loss: 0.01
    reorder: 0.01
    duplicate: 0.01
    corrupt: 0.01
    seed: 7'

# sender config: INTERFACE-YAML (the interfaces: list entry)
send_cfg() {
	cat <<EOT
interfaces:
$1
send:
  rate_pps: 40000
  burst: 16
  generator:
    packets: 12000
    packet_size: 256
    flows: 4
$faults
${send_extra:-}
EOT
}

recv_cfg() { # INTERFACE-YAML
	cat <<EOT
memory_regions:
  - { name: rx, kind: host, buf_size: 2048, num_bufs: 32768 }
interfaces:
$1
pipeline:
  device: cpu
  workers: 1
  filter: { udp_dst_ports: [5000] }
  reorder: { enabled: true, window: 1024 }
  verify_payload: true
  duration_s: 3600 # stopped by case_run once it has counted what was sent
expect:
  all_received: true
  in_order: true
  verified: true
  min_packets: 1
EOT
}

send_extra= # more generator keys (indented 4)

# ready_cmd RECV-IFACE LOG: the command that succeeds once that receiver
# takes packets
ready_cmd() {
	case $1 in
	*"address: udp://"*) echo "listening u 5000" ;;
	*"address: tcp://"*) echo "listening t 5000" ;;
	*) echo "grep -q ^vfgx:.info:.in:.AF_XDP.on $2" ;;
	esac
}

case_run() { # NAME SEND-IFACE RECV-IFACE [TEXT THE SENDER'S JSON HAS]
	local n=$1 want=${4:-} src=- rrc=-
	send_cfg "$2" >"$tmp/$n-send.yaml"
	recv_cfg "$3" >"$tmp/$n-recv.yaml"
	ip netns exec "$B" "$vfgx" run -q --metrics "$RX_METRICS" --expect-sent "$tmp/$n-sent.json" \
		"$tmp/$n-recv.yaml" >"$tmp/$n-recv.log" 2>&1 &
	bgpid=$!
	# shellcheck disable=SC2046 # ready_cmd's words are the command
	if wait_until "$n: the receiver's port ($(ready_cmd "$3" "$tmp/$n-recv.log"))" $bgpid \
		$(ready_cmd "$3" "$tmp/$n-recv.log"); then
		ip netns exec "$A" "$vfgx" send --json "$tmp/$n-send.yaml" >"$tmp/$n-sent.json" 2>"$tmp/$n-send.log"
		src=$?
		# the receiver runs until told: everything sent is counted first
		rx_settle "$tmp/$n-sent.json"
	fi
	kill -INT $bgpid
	wait $bgpid; rrc=$?; bgpid=
	if [ "$src" = 0 ] && [ "$rrc" = 0 ] && grep -q "result: PASSED" "$tmp/$n-recv.log" &&
		grep -q '"lost":[1-9]' "$tmp/$n-sent.json" && grep -q '"corrupted":[1-9]' "$tmp/$n-sent.json" &&
		{ [ -z "$want" ] || tr -d ' \n' <"$tmp/$n-sent.json" | grep -qF "$want"; }; then
		echo "ok   - $n: $(grep -o 'delivered [0-9]* of [0-9]* expected; received [0-9]* of [0-9]* sent' "$tmp/$n-recv.log"), faults injected and accounted for"
		passes=$((passes + 1))
	else
		echo "FAIL - $n: send exit $src, receive exit $rrc"
		[ -f "$tmp/$n-send.log" ] && sed 's/^/  send: /' "$tmp/$n-send.log" "$tmp/$n-sent.json"
		sed 's/^/  recv: /' "$tmp/$n-recv.log"
		fails=$((fails + 1))
	fi
}

skip_case() { echo "SKIP: $1: $2"; }

case_run udp "  - { name: out, backend: socket, address: udp://$IPB:5000,
      rx: { queues: [ { id: 0 } ] }, tx: { queues: [ { id: 0 } ] },
      socket: { role: client } }" \
"  - { name: in, backend: socket, address: udp://$IPB:5000,
      rx: { queues: [ { id: 0, memory_region: rx } ] },
      socket: { role: server, rcvbuf: 33554432 } }"

case_run tcp "  - { name: out, backend: socket, address: tcp://$IPB:5000,
      rx: { queues: [ { id: 0 } ] }, tx: { queues: [ { id: 0 } ] },
      socket: { role: client } }" \
"  - { name: in, backend: socket, address: tcp://$IPB:5000,
      rx: { queues: [ { id: 0, memory_region: rx } ] },
      socket: { role: server, max_record: 2048 } }"

# a TCP peer that goes away mid-send: the sender ends with one line, its
# counts kept, exit 1
send_cfg "  - { name: out, backend: socket, address: tcp://$IPB:5001,
      rx: { queues: [ { id: 0 } ] }, tx: { queues: [ { id: 0 } ] },
      socket: { role: client } }" | sed 's/rate_pps: 40000/rate_pps: 5000/' >"$tmp/gone-send.yaml"
recv_cfg "  - { name: in, backend: socket, address: tcp://$IPB:5001,
      rx: { queues: [ { id: 0, memory_region: rx } ] },
      socket: { role: server, max_record: 2048 } }" >"$tmp/gone-recv.yaml"
ip netns exec "$B" "$vfgx" run -q --duration 1.5 "$tmp/gone-recv.yaml" >"$tmp/gone-recv.log" 2>&1 &
bgpid=$!
grc=-
if wait_until "tcp peer gone: the receiver listening on 5001" $bgpid listening t 5001; then
	ip netns exec "$A" "$vfgx" send --json "$tmp/gone-send.yaml" >"$tmp/gone.json" 2>"$tmp/gone.log"
	grc=$?
fi
wait $bgpid; bgpid=
err=$(sed -n 's/^ *"error":"\(.*\)",$/\1/p' "$tmp/gone.json")
sent=$(sed -n 's/^ *"packets":\([0-9]*\),$/\1/p' "$tmp/gone.json")
lost=$(sed -n 's/^ *"tx_error":\([0-9]*\),\{0,1\}$/\1/p' "$tmp/gone.json")
if [ "$grc" = 1 ] && [ -n "$err" ] && ((${sent:-0} > 0 && ${lost:-0} > 0)) &&
	[ "$(grep -c '^vfgx: ' "$tmp/gone.log")" -le 2 ]; then
	echo "ok   - tcp peer gone mid-send: exit 1, '$err', $sent sent before, $lost counted tx_error"
	passes=$((passes + 1))
else
	echo "FAIL - tcp peer gone mid-send: exit $grc, error '$err', sent ${sent:-?}, tx_error ${lost:-?}"
	sed 's/^/  /' "$tmp/gone.log" "$tmp/gone.json"
	fails=$((fails + 1))
fi

xdp_rx="  - { name: in, backend: afxdp, address: ${B}0,
      rx: { queues: [ { id: 0, memory_region: rx } ] },
      afxdp: { queues: [0], rx_ring: 16384, fill_ring: 16384 } }"
if [ "$have_afxdp" != 1 ]; then
	skip_case afxdp "this build has no AF_XDP backend (libxdp-dev, libbpf-dev)"
	skip_case dpdk "the DPDK sender's receiver is an AF_XDP port, not in this build"
else
	case_run afxdp "  - { name: out, backend: afxdp, address: ${A}0,
      rx: { queues: [ { id: 0 } ] }, tx: { queues: [ { id: 0 } ] },
      afxdp: { queues: [0] } }" "$xdp_rx"
fi
if [ "$have_dpdk" != 1 ]; then
	skip_case dpdk "this build has no DPDK backend (libdpdk-dev)"
elif [ "$have_afxdp" = 1 ]; then
	case_run dpdk "  - { name: out, backend: dpdk, address: 'net_af_packet0,iface=${A}0',
      rx: { queues: [ { id: 0 } ] }, tx: { queues: [ { id: 0 } ] },
      dpdk: { memory: { num_mbufs: 8191, fallback: host } } }" "$xdp_rx"
	# the generator replaying its laps: frames copied straight into the
	# mbufs, each copy given its lap's sequences and checksum (the
	# corrupted ones stay corrupted); the receiver checks them all
	send_extra="    replay: true"
	case_run dpdk-replay "  - { name: out, backend: dpdk, address: 'net_af_packet0,iface=${A}0',
      rx: { queues: [ { id: 0 } ] }, tx: { queues: [ { id: 0 } ] },
      dpdk: { memory: { num_mbufs: 8191, fallback: host } } }" "$xdp_rx" '"tx_in_place":true'
	send_extra=
fi
echo "$passes passed, $fails failed"
((fails == 0))
