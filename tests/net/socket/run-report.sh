#!/usr/bin/env bash
# run-report.sh VFGX - `vfgx run` with the socket backend accounts for what
# the backend dropped: oversized datagrams, refused TCP connections and a
# record trickled past record_timeout_ms are in the report and fail all_received (a clean live run passes it); one
# stream over two ports and two workers is delivered once and in order; a
# reorder config larger than the host's memory is one line and exit 2.
# Runs in a private network namespace (root) on 127.0.0.1; receive buffers
# hold every datagram sent, so a slow (sanitized) receiver loses none.
set -uo pipefail
vfgx=$1
if [ -z "${VFGX_REPORT_NETNS:-}" ]; then
	"$(dirname "$0")/../../../scripts/netns-probe.sh" ss unshare || exit $?
	VFGX_REPORT_NETNS=1 exec unshare --net "$0" "$@"
fi
ip link set lo up
# Debian's interpreter: a version-manager shim may take seconds to start
py=$(command -v /usr/bin/python3 || command -v python3)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

# wait_port udp|tcp PORT: until something listens there (bounded)
wait_port() {
	for _ in $(seq 200); do
		[ -n "$(ss -Hln"${1:0:1}" "sport = :$2" 2>/dev/null)" ] && return 0
		sleep 0.05
	done
	return 1
}

# send.py: udp PORT... (N good datagrams of stream 0 spread over the ports,
# then BIG oversized ones) | tcp PORT CLIENTS (one record each, kept open)
cat >"$tmp/send.py" <<'PY'
import socket, struct, sys, time
mode = sys.argv[1]
if mode == "udp":
    n, big = int(sys.argv[2]), int(sys.argv[3])
    ports = [int(p) for p in sys.argv[4:]]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for seq in range(n):
        last = 1 if seq == n - 1 else 0
        s.sendto(struct.pack("!IIQ", 0, last, seq) + bytes(100), ("127.0.0.1", ports[seq % len(ports)]))
        if seq % 64 == 63:
            time.sleep(0.002)
    for _ in range(big):
        s.sendto(struct.pack("!IIQ", 1, 0, 0) + bytes(1000), ("127.0.0.1", ports[0]))
elif mode == "trickle":
    # one whole record, then a record trickled a byte every 100 ms for 3 s
    port = int(sys.argv[2])
    c = socket.create_connection(("127.0.0.1", port))
    body = struct.pack("!IIQ", 0, 1, 0) + bytes(32)
    c.sendall(struct.pack("!I", len(body)) + body)
    c.sendall(struct.pack("!I", 1000) + bytes(10))
    for _ in range(30):
        time.sleep(0.1)
        try:
            c.send(b"x")
        except OSError:
            break
else:
    port, clients = int(sys.argv[2]), int(sys.argv[3])
    socks = []
    for i in range(clients):
        c = socket.create_connection(("127.0.0.1", port))
        body = struct.pack("!IIQ", i, 1, 0) + bytes(32)
        c.sendall(struct.pack("!I", len(body)) + body)
        socks.append(c)
        time.sleep(0.05)
    time.sleep(1)
PY

# run NAME CONFIG PROTO PORT SENDER_ARGS...: vfgx run in the background,
# the sender once PROTO PORT listens; output in $tmp/NAME.out, exit code in
# $tmp/NAME.rc
run() {
	local name=$1 cfg=$2 proto=$3 port=$4
	shift 4
	"$vfgx" run "$cfg" --quiet >"$tmp/$name.out" 2>&1 &
	local pid=$!
	if wait_port "$proto" "$port"; then
		"$py" "$tmp/send.py" "$@" || bad "$name: sender failed"
	else
		bad "$name: nothing listens on $proto port $port"
	fi
	wait $pid
	echo $? >"$tmp/$name.rc"
}

udp_cfg() { # BUF_SIZE WORKERS PORTS... (each port its own pool)
	local buf=$1 workers=$2
	shift 2
	printf 'interfaces:\n'
	for p in "$@"; do
		printf '  - backend: socket\n    address: udp://127.0.0.1:%s\n' "$p"
		printf '    socket: {gro: false, rcvbuf: 16777216, buf_size: %s}\n' "$buf"
	done
	# a window above all 4000 sequences: however far one worker lags the
	# other (a sanitized, loaded receiver), nothing slides out of it
	printf 'pipeline: {workers: %s, duration_s: 4, reorder: {window: 8192}}\n' "$workers"
	printf 'expect: {all_received: true, in_order: true, min_packets: 1}\n'
}

# verdict NAME WANT_RC WHAT PATTERN...: run NAME exited WANT_RC and its
# output matches every PATTERN
verdict() {
	local name=$1 want=$2 what=$3 rc pat
	shift 3
	rc=$(cat "$tmp/$name.rc")
	for pat in "$@"; do
		grep -qE -- "$pat" "$tmp/$name.out" || { rc="$rc, no /$pat/"; break; }
	done
	if [ "$rc" = "$want" ]; then
		ok "$what"
	else
		bad "$what (exit $rc)"; sed 's/^/     /' "$tmp/$name.out" | tail -20
	fi
}

# 1. oversized datagrams: dropped by the port, in the report, all_received fails
udp_cfg 512 1 5000 >"$tmp/big.yaml"
run big "$tmp/big.yaml" udp 5000 udp 200 3 5000
verdict big 1 "oversized datagrams in the report and in all_received" \
	'^port .* rx queue 0 drop truncated +3$' \
	'all_received +FAILED +live source: received 200, delivered 200; dropped by ports 3'

# 2. the same without oversized ones: a clean live run passes all_received
run clean "$tmp/big.yaml" udp 5000 udp 200 0 5000
verdict clean 0 "clean live run passes all_received" \
	'all_received +ok +live source: received 200, delivered 200; dropped by ports 0'

# 3. one stream over two ports and two workers: once, in order, handed over
# (under ThreadSanitizer also: no race in vfgx run's order checker)
udp_cfg 2048 2 5000 5001 >"$tmp/split.yaml"
run split "$tmp/split.yaml" udp 5001 udp 4000 0 5000 5001
verdict split 0 "one stream over two workers delivered once, in order" \
	'all_received +ok +live source: received 4000, delivered 4000' \
	'in_order +ok +0 out-of-order' '^reorder: [1-9][0-9]* packets handed to their stream'

# 4. TCP connections past max_conns: refused, reported, all_received fails
cat >"$tmp/tcp.yaml" <<'Y'
interfaces:
  - backend: socket
    address: tcp://127.0.0.1:7000
    socket: {max_conns: 1}
pipeline: {duration_s: 4}
expect: {all_received: true}
Y
run tcp "$tmp/tcp.yaml" tcp 7000 tcp 7000 2
verdict tcp 1 "refused TCP connection in the report and in all_received" \
	'^port .* connections: [0-9]+ open, [0-9]+ closed, 1 refused' \
	'all_received +FAILED .*connections refused 1'

# 4b. a TCP record trickled past record_timeout_ms: the connection closed,
# the record counted truncated, both in the report (issue #43)
cat >"$tmp/slow.yaml" <<'Y'
interfaces:
  - backend: socket
    address: tcp://127.0.0.1:7001
    socket: {record_timeout_ms: 500}
pipeline: {duration_s: 5}
expect: {all_received: true}
Y
run slow "$tmp/slow.yaml" tcp 7001 trickle 7001
verdict slow 1 "a trickled TCP record closed slow, in the report and in all_received" \
	'^port .* connections: 0 open, 1 closed, 0 refused \(max_conns\), 0 closed idle, 1 closed slow' \
	'^port .* rx queue 0 drop truncated +1$' \
	'all_received +FAILED .*dropped by ports 1'

# 5. reorder memory that no host has: one line, exit 2, before anything opens
printf 'pipeline:\n  reorder: {window: 1048576, slot_size: 65536, max_streams: 65536}\n' >"$tmp/huge.yaml"
"$vfgx" run "$tmp/huge.yaml" >"$tmp/huge.out" 2>&1
rc=$?
if [ $rc = 2 ] && [ "$(wc -l <"$tmp/huge.out")" = 1 ] &&
   grep -qE "huge.yaml: pipeline.reorder: window 1048576 x slot_size 65536 x max_streams 65536 = .* GiB of reorder memory exceeds this host's" "$tmp/huge.out"; then
	ok "reorder memory beyond the host: one line, exit 2"
else
	bad "huge reorder config (exit $rc)"; sed 's/^/     /' "$tmp/huge.out" | tail -5
fi

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
