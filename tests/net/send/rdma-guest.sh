#!/bin/sh
# rdma-guest.sh VFGX - inside the soft-RoCE guest (tests/vm/vm-run.sh --
# tests/vm/rxe-env.sh rdma-guest.sh VFGX): `vfgx send` over an RDMA RC
# connection into `vfgx run` on the same rxe device, two processes, loss,
# reordering, duplicates and corruption injected at the sender and
# accounted for exactly at the receiver (--expect-sent); once with SENDs
# (rdma.mode: send) and once with one-sided WRITEs into the receiver's
# exposed ring (rdma.mode: ring, an 8 KiB ring: every record's space is
# reused many times, so the sender runs on head words read back from the
# receiver).  Then a ring-mode sender against a send-mode receiver: one
# error line, no hang.
vfgx=$1
[ -n "${VFGX_RDMA_DEV:-}" ] || { echo "SKIP: rdma-guest.sh runs inside tests/vm/rxe-env.sh"; exit 77; }
tmp=$(mktemp -d)
fails=0

# one_run NAME PORT MODE_OPTS: 0 when every packet is accounted for
one_run() {
	cat >"$tmp/recv.yaml" <<EOT
memory_regions:
  - { name: rx, kind: host, buf_size: 2048, num_bufs: 2048 }
interfaces:
  - { name: in, backend: rdma,
      rx: { queues: [ { id: 0, memory_region: rx } ] },
      rdma: { device: $VFGX_RDMA_DEV, role: server, peer: "$VFGX_RDMA_IP:$2",
              recv_depth: 1024, timeout_ms: 120000 $3 } }
pipeline:
  device: cpu
  workers: 1
  reorder: { enabled: true, window: 256 }
  verify_payload: true
  duration_s: 25
expect: { all_received: true, in_order: true, verified: true }
EOT
	cat >"$tmp/send.yaml" <<EOT
interfaces:
  - { name: out, backend: rdma,
      rx: { queues: [ { id: 0 } ] }, tx: { queues: [ { id: 0 } ] },
      rdma: { device: $VFGX_RDMA_DEV, role: client, peer: "$VFGX_RDMA_IP:$2",
              timeout_ms: 120000 $3 } }
send:
  rate_pps: 500
  burst: 8
  generator: { packets: 3000, packet_size: 256, flows: 2, loss: 0.02, reorder: 0.02,
               duplicate: 0.02, corrupt: 0.02, seed: 3 }
EOT
	"$vfgx" run -q --expect-sent "$tmp/sent.json" "$tmp/recv.yaml" >"$tmp/recv.log" 2>&1 &
	rpid=$!
	sleep 3
	"$vfgx" send --json "$tmp/send.yaml" >"$tmp/sent.json" 2>"$tmp/send.log"
	src=$?
	wait $rpid
	rrc=$?
	cat "$tmp/send.log" "$tmp/recv.log"
	if [ $src = 0 ] && [ $rrc = 0 ] && grep -q "result: PASSED" "$tmp/recv.log" &&
		grep -q '"lost":[1-9]' "$tmp/sent.json" && grep -q '"corrupted":[1-9]' "$tmp/sent.json"; then
		echo "ok   - rdma $1: $(grep -o 'delivered [0-9]* of [0-9]* expected; received [0-9]* of [0-9]* sent' "$tmp/recv.log"), faults injected and accounted for"
		return 0
	fi
	echo "FAIL - rdma $1: send exit $src, receive exit $rrc"
	cat "$tmp/sent.json"
	fails=$((fails + 1))
}

one_run "SENDs" 7471 ""
# 8 KiB ring: 256-byte records, about 28 in flight at most
one_run "WRITEs into the exposed ring" 7472 ", mode: ring, ring_bytes: 8192"

# a ring-mode sender against a send-mode receiver: the descriptor never
# comes; one line naming the cause, exit non-zero, within the timeout
cat >"$tmp/recv.yaml" <<EOT
interfaces:
  - { name: in, backend: rdma, rdma: { device: $VFGX_RDMA_DEV, role: server,
      peer: "$VFGX_RDMA_IP:7473", timeout_ms: 20000 } }
pipeline: { device: cpu, duration_s: 8 }
expect: { min_packets: 0 }
EOT
cat >"$tmp/send.yaml" <<EOT
interfaces:
  - { name: out, backend: rdma, rx: { queues: [ { id: 0 } ] }, tx: { queues: [ { id: 0 } ] },
      rdma: { device: $VFGX_RDMA_DEV, role: client, peer: "$VFGX_RDMA_IP:7473",
              timeout_ms: 4000, mode: ring } }
send: { generator: { packets: 10 } }
EOT
"$vfgx" run -q "$tmp/recv.yaml" >"$tmp/recv.log" 2>&1 &
rpid=$!
sleep 2
timeout 60 "$vfgx" send "$tmp/send.yaml" >"$tmp/send.log" 2>&1
src=$?
wait $rpid
if [ $src != 0 ] && [ $src != 124 ] && [ "$(grep -v ': info: ' "$tmp/send.log" | grep -c .)" = 1 ] &&
	grep -q "is its rdma.mode ring too" "$tmp/send.log"; then
	echo "ok   - ring sender, send-mode receiver: exit $src, $(grep -v ": info: " "$tmp/send.log")"
else
	echo "FAIL - ring sender, send-mode receiver: exit $src"
	cat "$tmp/send.log"
	fails=$((fails + 1))
fi
exit $((fails > 0))
