#!/usr/bin/env bash
# afxdp-veth.sh VFGX UDP_PEER AFXDP_TX [PART] - AF_XDP end to end over a
# veth pair between two namespaces.  PART main (default): a UDP stream into
# `vfgx run` (count, order and payload checked by the pipeline) in native
# and generic XDP mode; tx from an afxdp port to a plain socket; the error
# cases (missing interface, invalid queue id, zero_copy: on on veth,
# interface already carrying an XDP program), each one clear line and a
# clean exit; and no XDP program left after close, SIGTERM, SIGINT or
# SIGKILL.  PART queues: rx on two queues.  PART gpu: rx into pinned UMEM
# read in place by the GPU pipeline.  Each part is its own meson test and
# exits 77 (skip, with the reason) where it cannot run here.
set -uo pipefail
vfgx=$1 peer=$2 txprog=$3 part=${4:-main}
root=$(cd "$(dirname "$0")/../../.." && pwd)
name=xdt
export VETH_NET=72
A=$name-a B=$name-b
IPA=198.18.$VETH_NET.1 IPB=198.18.$VETH_NET.2
fails=0

skip() { echo "SKIP: $*"; exit 77; }
case $part in
main) ;;
gpu) command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 ||
	skip "rx into pinned UMEM read by the GPU: no GPU here (nvidia-smi finds none)" ;;
queues) (($(nproc) >= 2)) || skip "rx on 2 queues: needs 2 CPUs for the two pinned senders, this machine has $(nproc)" ;;
*) echo "afxdp-veth.sh: PART must be main, queues or gpu" >&2; exit 2 ;;
esac
"$root/scripts/netns-probe.sh" ethtool || exit $?
tmp=$(mktemp -d /tmp/afxdp-test.XXXXXX)

cleanup() {
	[ -n "${bgpid:-}" ] && kill "$bgpid" 2>/dev/null && wait "$bgpid" 2>/dev/null
	"$root/scripts/netns-veth.sh" down $name
	rm -rf "$tmp"
}
trap cleanup EXIT

ok() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; fails=$((fails + 1)); }
nsa() { ip netns exec "$A" "$@"; }
nsb() { ip netns exec "$B" "$@"; }
xdp_prog_on_b() { ip -n "$B" link show "$B"0 | grep -q 'prog/xdp'; }
wait_prog() {
	for _ in $(seq 100); do xdp_prog_on_b && return 0; sleep 0.1; done
	return 1
}

"$root/scripts/netns-veth.sh" up $name >/dev/null || { echo "FAIL - scripts/netns-veth.sh up $name failed (its error above)"; exit 1; }
# The XDP program takes every frame of the queue, ARP included: a static
# neighbour entry on the sender.  veth leaves UDP checksums to "hardware"
# (CHECKSUM_PARTIAL); an AF_XDP reader sees raw frames, so the sender
# computes them in software.
macb=$(ip -n "$B" -br link show "$B"0 | awk '{print $3}')
maca=$(ip -n "$A" -br link show "$A"0 | awk '{print $3}')
ip -n "$A" neigh replace "$IPB" lladdr "$macb" dev "$A"0 nud permanent
nsa ethtool -K "$A"0 tx off >/dev/null
# no IPv6 neighbour/MLD chatter in the counts
nsa sysctl -qw net.ipv6.conf."$A"0.disable_ipv6=1
nsb sysctl -qw net.ipv6.conf."$B"0.disable_ipv6=1

cfg() { # cfg FILE MODE QUEUE ADDRESS
	sed -e "s/address: vfgx-b0/address: $4/" -e "s/mode: auto /mode: $2 /" \
	    -e "s/queues: \[0\] /queues: [$3] /" "$root/configs/afxdp-veth.yaml" >"$1"
}

# --- rx: UDP stream into the pipeline -----------------------------------------
rx_case() { # rx_case MODE COUNT SIZE
	local mode=$1 count=$2 size=$3 log=$tmp/rx-$1.log
	cfg "$tmp/rx.yaml" "$mode" 0 "$B"0
	ip netns exec "$B" "$vfgx" run "$tmp/rx.yaml" --duration 8 >"$log" 2>&1 &
	bgpid=$!
	if ! wait_prog; then
		fail "rx $mode: no XDP program attached"; cat "$log"; kill $bgpid; wait $bgpid; bgpid=; return
	fi
	nsa "$peer" send "$IPB" 5000 "$count" "$size" 0 10000 >/dev/null
	wait $bgpid; local rc=$?; bgpid=
	local want="delivered $count ($((count * (size - 16))) payload bytes), gaps 0, verify errors 0"
	local m=native; [ "$mode" = generic ] && m="generic (SKB)"
	if ((rc == 0)) && grep -qF "$want" "$log" && grep -q "result: PASSED" "$log" &&
	   grep -qF ": $m XDP, copy mode" "$log" && ! grep -qE "^drop (bad_udp|bad_ip|truncated|no_bufs|ring_full|late|duplicate)" "$log"; then
		ok "rx $mode: $count x $size B datagrams delivered in order, payloads verified ($m XDP, copy mode)"
	else
		fail "rx $mode: expected '$want' and PASSED"; cat "$log"
	fi
	if xdp_prog_on_b; then fail "rx $mode: XDP program left after vfgx exited"; else ok "rx $mode: XDP program detached at exit"; fi
}

# --- rx into a pinned UMEM that the GPU pipeline reads in place -----------------
# Only where CUDA finds a GPU (the device machine): the UMEM is a pinned
# region, the pipeline runs on the GPU and reads the frames where the kernel
# wrote them (no staging copy).
gpu_case() {
	sed -e "s/address: vfgx-b0/address: ${B}0/" -e "s/kind: host /kind: pinned /" \
	    -e "s/^  device: auto/  device: gpu/" "$root/configs/afxdp-veth.yaml" >"$tmp/gpu.yaml"
	ip netns exec "$B" "$vfgx" run "$tmp/gpu.yaml" --duration 10 >"$tmp/gpu.log" 2>&1 &
	bgpid=$!
	if wait_prog; then
		nsa "$peer" send "$IPB" 5000 20000 1024 0 10000 >/dev/null
	fi
	wait $bgpid; local rc=$?; bgpid=
	local want="delivered 20000 ($((20000 * (1024 - 16))) payload bytes), gaps 0, verify errors 0"
	if ((rc == 0)) && grep -qF "$want" "$tmp/gpu.log" && grep -q "result: PASSED" "$tmp/gpu.log" &&
	   grep -q "frames in pinned memory" "$tmp/gpu.log" && grep -q "GPU pipeline:" "$tmp/gpu.log"; then
		ok "rx into pinned UMEM, GPU pipeline reading frames in place: 20000 x 1024 B delivered in order, payloads verified"
	else
		fail "rx into pinned UMEM with the GPU pipeline: expected '$want' and PASSED"; cat "$tmp/gpu.log"
	fi
}

# --- rx on two queues: one socket per queue ----------------------------------------
# XPS pins each sender's CPU to one veth tx queue, so stream s lands on rx
# queue s of the peer.
queues_case() {
	nsb ethtool -L "$B"0 rx 2 tx 2 2>/dev/null && nsa ethtool -L "$A"0 rx 2 tx 2 2>/dev/null &&
	nsa sh -c "echo 1 > /sys/class/net/${A}0/queues/tx-0/xps_cpus && echo 2 > /sys/class/net/${A}0/queues/tx-1/xps_cpus" ||
		skip "rx on 2 queues: this kernel's veth refuses channel changes (ethtool -L) or XPS"
	sed -e "s/address: vfgx-b0/address: ${B}0/" -e "s/queues: \[0\] /queues: [0, 1] /" -e "s/workers: 1/workers: 2/" \
	    -e "s/^\(        - { id: 0, memory_region: umem, batch_size: 64 }\)$/\1\n        - { id: 1, memory_region: umem, batch_size: 64 }/" \
	    "$root/configs/afxdp-veth.yaml" >"$tmp/mq.yaml"
	ip netns exec "$B" "$vfgx" run "$tmp/mq.yaml" --duration 4 >"$tmp/mq.log" 2>&1 &
	bgpid=$!
	wait_prog
	for s in 0 1; do nsa taskset -c $s "$peer" send "$IPB" 5000 5000 256 $s 5000 >/dev/null & done
	wait $bgpid; rc=$?; bgpid=
	wait
	if ((rc == 0)) && grep -qE "rx queue 0: 50[0-9]{2} packets" "$tmp/mq.log" && grep -qE "rx queue 1: 50[0-9]{2} packets" "$tmp/mq.log" &&
	   grep -qF "delivered 10000 (2400000 payload bytes), gaps 0, verify errors 0" "$tmp/mq.log"; then
		ok "rx 2 queues: 5000 datagrams on each queue's socket, all delivered in order"
	else
		fail "rx 2 queues"; cat "$tmp/mq.log"
	fi
	nsb ethtool -L "$B"0 rx 1 tx 1; nsa ethtool -L "$A"0 rx 1 tx 1
}

if [ "$part" != main ]; then
	"${part}_case"
	echo "afxdp-veth $part: $fails failure(s)"
	((fails == 0))
	exit
fi

rx_case auto 20000 512
rx_case generic 5000 1400

# --- tx: afxdp port -> plain UDP socket --------------------------------------------
ip netns exec "$A" "$peer" recv 6000 5000 512 15 >"$tmp/recv.log" 2>&1 &
bgpid=$!
sleep 0.3
nsb "$txprog" "$B"0 "$maca" "$IPB" "$IPA" 6000 5000 554 0 >"$tmp/tx.log" 2>&1
txrc=$?
wait $bgpid; rrc=$?; bgpid=
if ((txrc == 0 && rrc == 0)) && grep -q "received 5000 of 5000, bad payloads 0, out of order 0" "$tmp/recv.log"; then
	ok "tx: 5000 frames from vfgx_port_tx_burst received intact and in order by a UDP socket"
else
	fail "tx (tx rc $txrc, recv rc $rrc)"; cat "$tmp/tx.log" "$tmp/recv.log"
fi

# --- errors: one clear line, clean exit, nothing left on the interface ---------
err_case() { # err_case WHAT CONFIG PATTERN
	local what=$1 log=$tmp/err.log
	nsb timeout 20 "$vfgx" run "$2" --duration 1 >"$log" 2>&1
	local rc=$? lines
	lines=$(grep -v ': info: ' "$log" | grep -c .)
	if ((rc != 0 && rc != 124 && rc < 128)) && ((lines == 1)) && grep -qE "$3" "$log"; then
		ok "error $what: exit $rc, '$(grep -v ': info: ' "$log")'"
	else
		fail "error $what (exit $rc, $lines lines)"; cat "$log"
	fi
}
cfg "$tmp/e1.yaml" auto 0 nosuch0
err_case "missing interface" "$tmp/e1.yaml" "interface 'nosuch0' not found"
cfg "$tmp/e2.yaml" auto 7 "$B"0
err_case "invalid queue id" "$tmp/e2.yaml" "has [0-9]+ rx queue\(s\), no queue 7"
sed -e "s/address: vfgx-b0/address: ${B}0/" -e "s/zero_copy: auto /zero_copy: on /" "$root/configs/afxdp-veth.yaml" >"$tmp/e5.yaml"
err_case "zero_copy: on without driver support" "$tmp/e5.yaml" "\(driver veth\) has no AF_XDP zero-copy \(set afxdp.zero_copy: auto or off\)"
if xdp_prog_on_b; then fail "XDP program left after failed opens"; else ok "no XDP program after failed opens"; fi
# someone else's program: libxdp's pass-all filter attached by iproute2
if ip -n "$B" link set dev "$B"0 xdpgeneric obj /usr/lib/x86_64-linux-gnu/bpf/xdpfilt_alw_all.o sec xdp 2>/dev/null; then
	cfg "$tmp/e3.yaml" auto 0 "$B"0
	err_case "interface already carrying an XDP program" "$tmp/e3.yaml" "already carries XDP program [0-9]+ 'xdpfilt_alw_all'.*xdpgeneric off"
	if ip -n "$B" link show "$B"0 | grep -q xdpfilt_alw_all; then
		ok "the other program was left alone"
	else
		fail "the other program was removed"
	fi
	ip -n "$B" link set dev "$B"0 xdpgeneric off
fi
# another vfgx holding the interface
ip netns exec "$B" "$txprog" "$B"0 "$maca" "$IPB" "$IPA" 6001 1 100 20 >"$tmp/hold.log" 2>&1 &
bgpid=$!
wait_prog
cfg "$tmp/e4.yaml" auto 0 "$B"0
err_case "interface held by another vfgx" "$tmp/e4.yaml" "already carries XDP program [0-9]+ 'xsk_def_prog'"
kill $bgpid; wait $bgpid; bgpid=

# --- signals: the bpf_link goes with the process, however it ends ---------------
for sig in TERM INT KILL; do
	cfg "$tmp/s.yaml" auto 0 "$B"0
	ip netns exec "$B" "$vfgx" run "$tmp/s.yaml" --duration 60 >"$tmp/sig.log" 2>&1 &
	bgpid=$!
	if ! wait_prog; then fail "SIG$sig: program never attached"; cat "$tmp/sig.log"; kill -9 $bgpid; wait $bgpid; bgpid=; continue; fi
	# ip netns exec runs vfgx as its child: signal vfgx itself
	vp=$(pgrep -P $bgpid -x vfgx || echo $bgpid)
	kill -s $sig "$vp"
	{ wait $bgpid; } 2>/dev/null; bgpid=
	if xdp_prog_on_b; then fail "SIG$sig: XDP program left on $B""0"; else ok "SIG$sig: no XDP program left"; fi
done

echo "afxdp-veth: $fails failure(s)"
((fails == 0))
