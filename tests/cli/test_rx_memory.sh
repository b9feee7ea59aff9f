#!/usr/bin/env bash
# test_rx_memory.sh VFGX - what an engine cannot read is refused by
# `vfgx run` at config load, in one line, exit 2, for every source: with a
# memory region or in the backend's own buffers (loopback, socket UDP and
# TCP, pcap, AF_XDP, DPDK, RDMA), before any region, port or GPU is made
# (so on a host without a GPU too).  The gpu engine copies host-memory
# frames through 2048-byte slots: a source whose options allow larger
# frames in host memory is one line naming the option, not an EMSGSIZE at
# run time; GPU memory under the cpu engine is one line whatever the
# backend.  A backend section's unknown key is one line at load too.
set -uo pipefail
vfgx=$1
# the build's features (vfgx_build.h beside the build's src/): a backend
# not built in has no options to check (its port says so at open)
build_h=$(dirname "$vfgx")/../../vfgx_build.h
built() { grep -q "define VFGX_HAVE_$1 1" "$build_h"; }
[ -f "$build_h" ] || { echo "FAIL no $build_h"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/cli/refused.sh
. "$(dirname "$0")/refused.sh"

refused_built() { # FEATURE NAME PATTERN CONFIG: refused when FEATURE is in this build
	if built "$1"; then
		refused "${@:2}"
	else
		ok "${1,,}: not in this build (skipped)"
	fi
}

# NAME BACKEND SECTION [QUEUE-EXTRA]: a one-interface config with device gpu
gpu_cfg() {
	cat >"$tmp/$1.yaml" <<Y
memory_regions:
  - { name: host4k, kind: host, buf_size: 4096, num_bufs: 256 }
  - { name: huge4k, kind: hugepage, buf_size: 4096, num_bufs: 256 }
  - { name: pin4k, kind: pinned, buf_size: 4096, num_bufs: 256 }
interfaces:
  - name: $1
    backend: $2
$3
pipeline: { device: gpu, duration_s: 2 }
Y
	echo "$tmp/$1.yaml"
}
slots='but the gpu engine copies host-memory frames through 2048-byte slots'

# the backends' own buffers (no memory_region): the option that allows the
# frames is named
f=$(gpu_cfg lb0 loopback '    loopback: { packets: 10, packet_size: 3000 }')
refused "loopback own buffers, 3000-byte frames" \
	"^vfgx: $f: interface lb0 rx queue 0: the loopback backend's own buffers: host memory with frames of up to 3000 bytes, $slots \\(use memory_regions\\[\\]\\.kind: pinned, or loopback\\.packet_size: 2048 or less\\)$" "$f"
f=$(gpu_cfg tcp0 socket '    address: tcp://127.0.0.1:7')
refused "socket TCP own buffers, records up to max_record" \
	"^vfgx: $f: interface tcp0 rx queue 0: the socket backend's own buffers: host memory with frames of up to 65536 bytes, $slots \\(use memory_regions\\[\\]\\.kind: pinned, or socket\\.max_record: 2048 or less\\)$" "$f"
f=$(gpu_cfg udp0 socket $'    address: udp://127.0.0.1:7\n    socket: { buf_size: 9000 }')
refused "socket UDP own buffers of 9000 bytes" \
	"^vfgx: $f: interface udp0 rx queue 0: the socket backend's own buffers: host memory with frames of up to 9000 bytes, $slots \\(.*socket\\.buf_size: 2048 or less\\)$" "$f"
f=$(gpu_cfg pc0 pcap '    address: /nonexistent.pcap')
refused "pcap own buffers (buf_size 16384 by default)" \
	"^vfgx: $f: interface pc0 rx queue 0: the pcap backend's own buffers: host memory with frames of up to 16384 bytes, $slots \\(.*pcap\\.buf_size: 2048 or less\\)$" "$f"
f=$(gpu_cfg ax0 afxdp $'    address: lo\n    afxdp: { frame_size: 4096 }')
refused_built AFXDP "AF_XDP UMEM frames of 4096 bytes" \
	"^vfgx: $f: interface ax0 rx queue 0: the afxdp backend's own buffers: host memory with frames of up to 4096 bytes, $slots \\(.*afxdp\\.frame_size: 2048 or less\\)$" "$f"
f=$(gpu_cfg dk0 dpdk $'    address: net_null0\n    dpdk: { memory: { mbuf_size: 4224 } }')
refused_built DPDK "DPDK mbufs of 4096 data bytes" \
	"^vfgx: $f: interface dk0 rx queue 0: the dpdk backend's own buffers: host memory with frames of up to 4096 bytes, $slots \\(.*dpdk\\.memory\\.mbuf_size: 2048 or less\\)$" "$f"
f=$(gpu_cfg rd0 rdma $'    rdma: { peer: "127.0.0.1:7471" }')
refused_built RDMA "RDMA own receive buffers (4096 bytes)" \
	"^vfgx: $f: interface rd0 rx queue 0: the rdma backend's own buffers: host memory with frames of up to 4096 bytes, $slots \\(use memory_regions\\[\\]\\.kind: pinned, or a region of buf_size 2048 or less\\)$" "$f"

# host and hugepage regions: the region's buffers bound the frames
f=$(gpu_cfg udp1 socket $'    address: udp://127.0.0.1:7\n    rx: { queues: [ { id: 0, memory_region: huge4k } ] }')
refused "socket UDP into a 4096-byte hugepage region" \
	"^vfgx: $f: interface udp1 rx queue 0: memory_region huge4k: host memory with frames of up to 4096 bytes, $slots \\(use memory_regions\\[\\]\\.kind: pinned, or buf_size: 2048 or less\\)$" "$f"

# not refused: frames that fit the slot in larger host buffers, and large
# frames in pinned memory (the GPU reads those in place); what follows the
# load (no GPU here, or a run) is not this rule's
for c in "lb1|loopback|    rx: { queues: [ { id: 0, memory_region: host4k } ] }
    loopback: { packets: 10, packet_size: 1500 }" \
	 "lb2|loopback|    rx: { queues: [ { id: 0, memory_region: pin4k } ] }
    loopback: { packets: 10, packet_size: 3000 }" \
	 "udp2|socket|    address: udp://127.0.0.1:7"; do
	IFS='|' read -r name be sec <<<"$c"
	f=$(gpu_cfg "$name" "$be" "$sec")
	out=$(timeout -s KILL 60 "$vfgx" run -q "$f" 2>&1)
	if grep -q "slots" <<<"$out"; then
		bad "$name: refused by the bounce rule: $out"
	else
		ok "$name: passes the load's memory check ($(head -1 <<<"$out"))"
	fi
done

# GPU memory under the cpu engine: one line, whatever the backend (the
# region is not made: no GPU is needed to be told)
for c in "s0|socket|    address: udp://127.0.0.1:7" "p0|pcap|    address: /nonexistent.pcap" \
	 "l0|loopback|    loopback: { packets: 10 }"; do
	IFS='|' read -r name be sec <<<"$c"
	cat >"$tmp/$name-cpu.yaml" <<Y
memory_regions:
  - { name: g, kind: gpu, buf_size: 2048, num_bufs: 256 }
interfaces:
  - name: $name
    backend: $be
$sec
    rx: { queues: [ { id: 0, memory_region: g } ] }
pipeline: { device: cpu }
Y
	refused "$be: GPU memory on the cpu engine" \
		"^vfgx: $tmp/$name-cpu.yaml: interface $name rx queue 0: memory_region g: GPU memory, which the cpu engine cannot read \\(.*\\)$" \
		"$tmp/$name-cpu.yaml"
done

# a backend section's unknown key or bad value: one line at load
printf 'interfaces:\n  - name: s1\n    backend: socket\n    address: udp://127.0.0.1:7\n    socket: { rcvbuff: 1 }\n' >"$tmp/key.yaml"
refused "socket: unknown key" "^vfgx: $tmp/key.yaml:5:15: interfaces\\[0\\]\\.socket\\.rcvbuff: unknown key \\(allowed: uri, role, .*\\)$" "$tmp/key.yaml"
printf 'interfaces:\n  - name: l1\n    backend: loopback\n    loopback:\n      flows: 0\n' >"$tmp/val.yaml"
refused "loopback: value out of range" "^vfgx: $tmp/val.yaml:5:14: interfaces\\[0\\]\\.loopback\\.flows: 0 is out of range" "$tmp/val.yaml"

echo "$fails failed"
exit $((fails > 0))
