#!/bin/sh
# rdma-guest.sh VFGX - inside the soft-RoCE guest (tests/vm/vm-run.sh --
# tests/vm/rxe-env.sh rdma-guest.sh VFGX): `vfgx send` over an RDMA RC
# connection (SENDs) into `vfgx run` on the same rxe device, two
# processes, loss, reordering, duplicates and corruption injected at the
# sender and accounted for exactly at the receiver (--expect-sent).
vfgx=$1
[ -n "${VFGX_RDMA_DEV:-}" ] || { echo "SKIP: rdma-guest.sh runs inside tests/vm/rxe-env.sh"; exit 77; }
tmp=$(mktemp -d)
cat >"$tmp/recv.yaml" <<EOT
memory_regions:
  - { name: rx, kind: host, buf_size: 2048, num_bufs: 2048 }
interfaces:
  - { name: in, backend: rdma,
      rx: { queues: [ { id: 0, memory_region: rx } ] },
      rdma: { device: $VFGX_RDMA_DEV, role: server, peer: "$VFGX_RDMA_IP:7471",
              recv_depth: 1024, timeout_ms: 120000 } }
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
      rdma: { device: $VFGX_RDMA_DEV, role: client, peer: "$VFGX_RDMA_IP:7471",
              timeout_ms: 120000 } }
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
	echo "ok   - rdma: $(grep -o 'delivered [0-9]* of [0-9]* expected; received [0-9]* of [0-9]* sent' "$tmp/recv.log"), faults injected and accounted for"
	exit 0
fi
echo "FAIL - rdma: send exit $src, receive exit $rrc"
cat "$tmp/sent.json"
exit 1
