#!/bin/sh
# bench-smoke.sh VFGX - `vfgx bench send` (its UDP and pacing rows) and
# `vfgx bench socket` (its UDP rows) run briefly, as root: each writes its
# results file with every row and target line it promises, from rounds it
# measured (a sender that sent, a receiver that received).  Nothing about
# speed or timing is asserted; bench/results/*.md hold the measurements.
set -u
VFGX=$1
fail() { echo "FAIL: bench-smoke: $*"; exit 1; }
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: bench-smoke: needs root (ip netns, veth, unshare)"
	exit 77
fi
for t in ip sockperf trafgen taskset; do
	command -v "$t" >/dev/null 2>&1 || { echo "SKIP: bench-smoke: needs $t (scripts/install-deps.sh)"; exit 77; }
done
out=$(mktemp -d /tmp/vfgx-bench-smoke-XXXXXX)
trap 'rm -rf "$out"' EXIT

# --- send: UDP rows --------------------------------------------------------
"$VFGX" bench send --only udp --rounds 3 --seconds 1 --out "$out" >"$out/log" 2>&1 ||
	{ cat "$out/log"; fail "vfgx bench send --only udp exited non-zero"; }
md=$out/send.md
grep -q '^- commit: [0-9a-f]' "$md" || fail "send.md names no commit"
n=$(grep -c '^| [0-9]* | UDP 64 B payload' "$md")
[ "$n" = 3 ] || fail "send.md: $n UDP rounds, want 3"
# every round: each of the four senders sent something
grep '^| [0-9]* | UDP 64 B payload' "$md" | while read -r line; do
	for who in 'vfgx send' 'same-syscall loop' 'sockperf tp' 'trafgen'; do
		v=$(printf '%s\n' "$line" | sed -n "s/.*$who \([0-9.]*\) Mpps.*/\1/p")
		awk -v v="${v:-0}" 'BEGIN { exit !(v > 0) }' ||
			fail "send.md: no rate from $who in: $line"
	done
done || exit 1
grep -q '^target: send_udp_64B_vs_same_syscall_loop .* rounds=3 ' "$md" ||
	fail "send.md: the UDP target is not computed from 3 rounds"

# --- send: pacing rows, measured at the receiver ----------------------------
"$VFGX" bench send --only pacing --rounds 3 --seconds 1 --out "$out" >"$out/log" 2>&1 ||
	{ cat "$out/log"; fail "vfgx bench send --only pacing exited non-zero"; }
for rate in 1000000 100000; do
	n=$(grep -c "^| [0-9]* | paced $rate pps" "$md")
	[ "$n" = 3 ] || fail "send.md: $n rounds paced at $rate pps, want 3"
done
# the receiver counted datagrams in every round
grep "^| [0-9]* | paced" "$md" | while read -r line; do
	got=$(printf '%s\n' "$line" | sed -n 's/.*; \([0-9]*\) of [0-9]* datagrams arrived.*/\1/p')
	[ "${got:-0}" -gt 0 ] || fail "send.md: the receiver got nothing in: $line"
done || exit 1
for t in error_pct_1Mpps error_pct_100kpps gap_p99_us_1Mpps gap_p99_us_100kpps; do
	grep -q "^target: send_pacing_$t .* rounds=3 " "$md" ||
		fail "send.md: send_pacing_$t is not computed from 3 rounds"
done

# --- socket: UDP receive rows -------------------------------------------------
"$VFGX" bench socket --only udp --rounds 1 --seconds 1 --out "$out" >"$out/log" 2>&1 ||
	{ cat "$out/log"; fail "vfgx bench socket --only udp exited non-zero"; }
md=$out/socket.md
grep -q '^- commit: [0-9a-f]' "$md" || fail "socket.md names no commit"
for size in 64 1024 1500; do
	grep -q "^target: socket_udp_rx_${size}B_msgs_per_rx_cpu_s .* rounds=1 " "$md" ||
		fail "socket.md: socket_udp_rx_${size}B is not computed from its round"
	# saturated: computed, or not measured with the reason (never silent)
	grep -Eq "^target: socket_udp_rx_saturated_${size}B_msgs_per_s (.* rounds=1 |.*met=no \(not)" "$md" ||
		fail "socket.md: no saturated target line for $size B"
	for who in 'sockperf sr' 'vfgx' 'same-syscall loop'; do
		grep -q "^| $size | 1 | $who | " "$md" ||
			fail "socket.md: no saturated round of $who at $size B"
	done
done
echo "bench-smoke: vfgx bench send (UDP, pacing) and vfgx bench socket (UDP) wrote every row and target"
