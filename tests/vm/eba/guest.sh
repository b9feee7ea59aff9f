#!/usr/bin/env bash
# guest.sh PEER - runs inside the QEMU guest: one soft-RoCE device on
# a veth (198.18.74.1), then exposed-buffer ring runs between two
# processes: 100,000 messages of 1 B..1 MB, a slow consumer, and wake-ups
# by WRITE_WITH_IMM.
set -uo pipefail
peer=$1
ip link add eba0 type veth peer name eba1 || exit 125
ip addr add 198.18.74.1/24 dev eba0
ip link set eba0 up
ip link set eba1 up
ip link set lo up
rdma link add rxe0 type rxe netdev eba0 || exit 125
fail=0
run() { # NAME PORT COUNT RING MAX MODE
	local name=$1 port=$2
	shift 2
	"$peer" consume rxe0 198.18.74.1 "$port" "$@" >"/tmp/$name.c" 2>&1 & local pc=$!
	for _ in $(seq 200); do grep -q listening "/tmp/$name.c" && break; sleep 0.05; done
	"$peer" produce rxe0 198.18.74.1 "$port" "$@" >"/tmp/$name.p" 2>&1; local rp=$?
	wait $pc; local rc=$?
	cat "/tmp/$name.p" "/tmp/$name.c"
	if ((rp || rc)); then echo "FAIL: $name (producer $rp, consumer $rc)"; fail=1; else echo "PASS: $name"; fi
}
run ring100k 7471 100000 $((4 << 20)) $((1 << 20)) normal
run slow 7472 3000 $((256 << 10)) $((64 << 10)) slow
run wake 7473 2000 $((64 << 10)) 4096 wake
exit $fail
