#!/bin/sh
# rdma-guest.sh VFGX - inside the soft-RoCE guest (tests/vm/vm-run.sh --
# tests/vm/rxe-env.sh rdma-guest.sh VFGX): `vfgx send` over an RDMA RC
# connection into `vfgx run` on the same rxe device, two processes, loss,
# reordering, duplicates and corruption injected at the sender and
# accounted for exactly at the receiver (--expect-sent); once with SENDs
# (rdma.mode: send) and once with one-sided WRITEs into the receiver's
# exposed ring (rdma.mode: ring, an 8 KiB ring: every record's space is
# reused many times, so the sender runs on head words read back from the
# receiver).  Each sender starts before its receiver listens (issue 43):
# the refused connect is tried again until rdma.connect_timeout_ms; with
# no receiver at all, one line when that expires.  Then a ring-mode sender
# against a send-mode receiver: one error line, no hang.
vfgx=$1
[ -n "${VFGX_RDMA_DEV:-}" ] || { echo "SKIP: rdma-guest.sh runs inside tests/vm/rxe-env.sh"; exit 77; }
tmp=$(mktemp -d)
fails=0

# wait_line FILE TEXT PID: until FILE has a line with TEXT (120 s at most,
# or until process PID has ended); 1, saying what was awaited, otherwise
wait_line() {
	i=0
	until grep -q "$2" "$1"; do
		if ! kill -0 "$3" 2>/dev/null || [ $i -ge 1200 ]; then
			echo "FAIL - no '$2' in $1 (process $3 $(kill -0 "$3" 2>/dev/null && echo 'still running after 120 s' || echo ended)):"
			cat "$1"
			return 1
		fi
		i=$((i + 1))
		sleep 0.1
	done
}

# settle RPID SENT_JSON: after the sender has exited, wait until the
# receiver (vfgx run --metrics $metrics, process RPID) has counted on its
# port every packet the sender's report says went out, then stop it
# (SIGINT: the run ends and checks as at pipeline.duration_s).  An RC
# SEND or WRITE the sender saw complete is in the receiver's memory; what
# it had not yet polled would be counted nowhere, hence the wait.  Without
# the count (a receiver that lost some), it runs to its duration_s as
# before and its own report says what is missing.  The page is read with
# the host's wget (tests/vm/mon/guest.sh reads it so too), the top-level
# "packets" of the report (json-c's pretty print: two spaces before each
# top-level key) with sed: no python3 start in the emulated guest.
metrics=127.0.0.1:9464
settle() {
	want=$(sed -n 's/^  "packets":\([0-9]*\),*$/\1/p' "$2" | head -n 1)
	[ -n "$want" ] || return 0
	got=-
	while kill -0 "$1" 2>/dev/null; do
		got=$(wget -q -O - "http://$metrics/metrics" 2>/dev/null |
			awk '/^vfgx_port_rx_packets_total[{]/ && /port="in"/ { n += $NF } END { printf "%d\n", n }')
		if [ "${got:-0}" -ge "$want" ]; then
			kill -INT "$1"
			echo "  settle: the receiver counted $got of the $want packets sent; stopped"
			return 0
		fi
		sleep 0.5
	done
	echo "  settle: the receiver ended (its duration_s) before it counted the $want packets sent (last count: ${got:-none})"
}

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
              timeout_ms: 120000, connect_timeout_ms: 120000 $3 } }
send:
  rate_pps: 500
  burst: 8
  generator: { packets: 3000, packet_size: 256, flows: 2, loss: 0.02, reorder: 0.02,
               duplicate: 0.02, corrupt: 0.02, seed: 3 }
EOT
	# the sender first: its connect refused (nothing listens yet) and
	# tried again; the receiver starts once the sender says so
	rm -f "$tmp/recv.log"
	"$vfgx" send --json "$tmp/send.yaml" >"$tmp/sent.json" 2>"$tmp/send.log" &
	spid=$!
	rpid='' rrc=-
	if wait_line "$tmp/send.log" "connection refused.*trying again" $spid; then
		"$vfgx" run -q --metrics "$metrics" --expect-sent "$tmp/sent.json" "$tmp/recv.yaml" >"$tmp/recv.log" 2>&1 &
		rpid=$!
	fi
	wait $spid
	src=$?
	if [ -n "$rpid" ]; then
		[ $src = 0 ] && settle $rpid "$tmp/sent.json"
		wait $rpid
		rrc=$?
	fi
	cat "$tmp/send.log"
	[ -f "$tmp/recv.log" ] && cat "$tmp/recv.log"
	if [ $src = 0 ] && [ "$rrc" = 0 ] && grep -q "result: PASSED" "$tmp/recv.log" &&
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

# no receiver at all: refused until rdma.connect_timeout_ms, then one line
# naming the cause and the key, exit non-zero (timeout 120: no hang)
cat >"$tmp/send.yaml" <<EOT
interfaces:
  - { name: out, backend: rdma, rx: { queues: [ { id: 0 } ] }, tx: { queues: [ { id: 0 } ] },
      rdma: { device: $VFGX_RDMA_DEV, role: client, peer: "$VFGX_RDMA_IP:7474",
              connect_timeout_ms: 3000 } }
send: { generator: { packets: 10 } }
EOT
timeout 120 "$vfgx" send "$tmp/send.yaml" >"$tmp/send.log" 2>&1
src=$?
errs=$(grep -v ': info: ' "$tmp/send.log")
if [ $src != 0 ] && [ $src != 124 ] && [ "$(echo "$errs" | grep -c .)" = 1 ] &&
	echo "$errs" | grep -q "connection refused.*tries in 3000 ms (rdma.connect_timeout_ms)"; then
	echo "ok   - no receiver: exit $src, $errs"
else
	echo "FAIL - no receiver: exit $src (124: still trying after 120 s)"
	cat "$tmp/send.log"
	fails=$((fails + 1))
fi

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
              timeout_ms: 4000, connect_timeout_ms: 120000, mode: ring } }
send: { generator: { packets: 10 } }
EOT
# started together: the sender tries again until the receiver listens
"$vfgx" run -q "$tmp/recv.yaml" >"$tmp/recv.log" 2>&1 &
rpid=$!
timeout 180 "$vfgx" send "$tmp/send.yaml" >"$tmp/send.log" 2>&1
src=$?
# the receiver's own end is not checked here: stopped, not awaited for
# its pipeline.duration_s
kill -INT $rpid 2>/dev/null
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
